// artune model measure / list / show, artune predict and apply config --prediction
// as a user runs them: a short model of loopback tcp (one polling mode, one round),
// a prediction over a scheme, and the config it writes.
#include <set>
#include <string>

#include "apply_cli_fixture.h"

namespace artune_cli_test {
namespace {

class PredictCliTest : public ApplyCliTest {
 protected:
  // A short model (adaptive polling, 1 and 4 calls in flight, one round): its id.
  int64_t MeasureShortModel() {
    const Outcome measured =
        Run("model measure --fabric tcp --polling adaptive --inflight 1,4 --rounds 1 --budget 20 "
            "--json");
    EXPECT_EQ(measured.exit_code, 0) << measured.err;
    if (measured.exit_code != 0) return 0;
    const json model = json::parse(measured.out);
    EXPECT_EQ(model.at("fabric"), "tcp");
    EXPECT_EQ(model.at("rounds"), 1);
    EXPECT_TRUE(model.at("stored").get<bool>());
    // Every protocol measured, each point's time positive.
    std::set<std::string> protocols;
    std::set<std::string> with_several_slices;  // protocols measured in calls of 2 and 8
    for (const json& point : model.at("points")) {
      protocols.insert(point.at("protocol").get<std::string>());
      if (point.at("slices").get<int>() > 1) {
        with_several_slices.insert(point.at("protocol").get<std::string>());
        EXPECT_EQ(point.at("inflight"), 1);
        EXPECT_LE(point.at("size").get<uint64_t>() * point.at("slices").get<uint64_t>(), 16u << 20);
      }
      EXPECT_GT(point.at("median_s").get<double>(), 0);
      EXPECT_EQ(point.at("polling"), "adaptive");
    }
    EXPECT_EQ(protocols, (std::set<std::string>{"eager", "coalesced-eager", "rendezvous-read",
                                                "chunked-rendezvous"}));
    EXPECT_EQ(with_several_slices,
              (std::set<std::string>{"rendezvous-read", "chunked-rendezvous"}));
    return model.at("id").get<int64_t>();
  }
};

TEST_F(PredictCliTest, MeasuresAModelPredictsAndAppliesTheBest) {
  const int64_t model_id = MeasureShortModel();
  ASSERT_GT(model_id, 0);

  const Outcome listed = Run("model list --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out).at("link_models").at(0).at("id"), model_id);
  const Outcome shown = Run("model show " + std::to_string(model_id));
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("chunked-rendezvous 512KiB depth 4, adaptive"), std::string::npos)
      << shown.out;

  const Outcome predicted =
      Run("predict --scheme skew --link-model " + std::to_string(model_id) +
          " --knob eager_threshold=1KiB,64KiB --knob chunk_size=64KiB,2MiB --json");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  const json prediction = json::parse(predicted.out);
  EXPECT_EQ(prediction.at("configs").size(), 4u);
  EXPECT_EQ(prediction.at("workload"), "scheme:skew");
  EXPECT_LT(prediction.at("compute_s").get<double>(), 1.0);
  EXPECT_GT(prediction.at("best").at("predicted_s").get<double>(), 0);
  // Fastest first, the best among them.
  double previous = 0;
  for (const json& config : prediction.at("configs")) {
    EXPECT_GE(config.at("predicted_s").get<double>(), previous);
    previous = config.at("predicted_s").get<double>();
  }
  const int64_t prediction_id = prediction.at("prediction_id").get<int64_t>();
  const json best = prediction.at("best").at("knobs");

  const Outcome applied =
      Run("apply config --prediction " + std::to_string(prediction_id) + " --output -");
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_NE(applied.out.find("eager_threshold = \"" +
                             best.at("eager_threshold").get<std::string>() + "\""),
            std::string::npos)
      << applied.out;
  EXPECT_NE(applied.out.find("prediction " + std::to_string(prediction_id) + " best"),
            std::string::npos)
      << applied.out;
}

TEST_F(PredictCliTest, PredictWithoutAModelSaysHowToMakeOne) {
  const Outcome predicted = Run("predict --scheme skew");
  EXPECT_EQ(predicted.exit_code, 1);
  EXPECT_NE(predicted.err.find("artune model measure"), std::string::npos) << predicted.err;
  const Outcome unknown = Run("apply config --prediction 7 --output -");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("no prediction with id 7"), std::string::npos) << unknown.err;
}

TEST_F(PredictCliTest, AModelWithoutTheConfigsPollingModeIsRefusedByName) {
  const int64_t model_id = MeasureShortModel();
  ASSERT_GT(model_id, 0);
  const Outcome predicted = Run("predict --scheme uniform --link-model " +
                                std::to_string(model_id) + " --knob polling=busy,adaptive");
  EXPECT_EQ(predicted.exit_code, 1);
  EXPECT_NE(predicted.err.find("under busy polling"), std::string::npos) << predicted.err;
}

}  // namespace
}  // namespace artune_cli_test
