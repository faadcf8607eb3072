// Views drawn into a Canvas at 80x24 and larger: titles, numbers, clipping, the
// "terminal too small" notice, the help, key handling.
#include "views.h"

#include <gtest/gtest.h>

#include "canvas.h"

namespace artune::dashboard {
namespace {

using std::chrono::seconds;

bool Contains(const Canvas& canvas, const std::string& text) {
  return canvas.Text().find(text) != std::string::npos;
}

// The sweep view of `input` on an 80 x 24 screen.
Canvas DrawSweepScreen(const SweepInput& input) {
  SweepPanel panel;
  panel.configured = true;
  panel.summary = SummarizeSweep(input);
  Canvas canvas(80, 24);
  UiState ui;
  ui.view = View::kSweep;
  Frame frame;
  frame.sweep = panel;
  DrawScreen(frame, ui, canvas);
  return canvas;
}

TrafficSnapshot SampleTraffic() {
  TrafficModel model;
  const SteadyTime t0 = SteadyTime{} + seconds(100);
  model.SetSource("exec train.py");
  model.MarkStarted(t0);
  model.SetState(SourceState::kRunning);
  for (int i = 0; i < 30; ++i) {
    model.AddMessage("/tensorflow.WorkerService/RecvTensor", probes::MessageDirection::kRequest, 60,
                     t0);
    model.AddMessage("/tensorflow.WorkerService/RecvTensor", probes::MessageDirection::kResponse,
                     1 << 20, t0);
  }
  model.AddMessage("/tensorflow.WorkerService/GetStatus", probes::MessageDirection::kRequest, 4,
                   t0);
  probes::IoCallEvent send;
  send.iovec_lengths = {9, 5000};
  send.result = 5009;
  model.AddIoCall(send);
  return model.Snapshot(t0 + std::chrono::milliseconds(1500));
}

TEST(CanvasTest, ClipsAtTheEdgesAndReadsBack) {
  Canvas canvas(10, 2);
  EXPECT_EQ(canvas.Put(0, 7, "abcdef", Style::kHeader), 13);
  canvas.Put(5, 0, "outside");
  canvas.Put(1, -2, "xyz");
  EXPECT_EQ(canvas.RowText(0), "       abc");
  EXPECT_EQ(canvas.RowText(1), "z");
  EXPECT_EQ(canvas.StyleAt(0, 8), Style::kHeader);
  EXPECT_EQ(canvas.Text(), "       abc\nz");
}

TEST(CanvasTest, NonPrintableBytesBecomeQuestionMarks) {
  Canvas canvas(4, 1);
  canvas.Put(0, 0, "a\tb\x80");
  EXPECT_EQ(canvas.RowText(0), "a?b?");
}

TEST(ViewsTest, TrafficViewShowsMethodsRatesAndHistograms) {
  Canvas canvas(80, 24);
  UiState ui;
  Frame frame;
  frame.traffic = SampleTraffic();
  DrawScreen(frame, ui, canvas);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "artune dashboard")) << text;
  EXPECT_TRUE(Contains(canvas, "1 traffic")) << text;
  EXPECT_EQ(canvas.StyleAt(0, static_cast<int>(canvas.RowText(0).find("1 traffic"))),
            Style::kTabActive);
  EXPECT_TRUE(Contains(canvas, "WorkerService/RecvTensor")) << text;
  EXPECT_TRUE(Contains(canvas, "WorkerService/GetStatus")) << text;
  EXPECT_TRUE(Contains(canvas, "RPC/s")) << text;
  // 30 requests in second 0, window of one second at 1.5 s.
  EXPECT_TRUE(Contains(canvas, "  30  ")) << text;
  EXPECT_TRUE(Contains(canvas, "message sizes:")) << text;
  EXPECT_TRUE(Contains(canvas, "iovec sizes (all send calls)")) << text;
  EXPECT_TRUE(Contains(canvas, "   1M #")) << text;  // the 1 MiB responses' bucket
  EXPECT_TRUE(Contains(canvas, "running")) << text;
  EXPECT_TRUE(Contains(canvas, "q quit")) << text;
  // Nothing is written past row 23 or column 79 (the canvas clips), and no row is
  // left blank where the table should be.
  EXPECT_EQ(canvas.RowText(23).find("q quit") != std::string::npos, true) << text;
}

TEST(ViewsTest, HistogramBarsAreColouredBySizeClass) {
  Canvas canvas(80, 24);
  Frame frame;
  frame.traffic = SampleTraffic();
  DrawScreen(frame, UiState{}, canvas);
  bool large_bar = false, small_bar = false;
  for (int row = 0; row < canvas.height(); ++row) {
    for (int col = 0; col < canvas.width(); ++col) {
      if (canvas.CharAt(row, col) != '#') continue;
      large_bar |= canvas.StyleAt(row, col) == Style::kLarge;
      small_bar |= canvas.StyleAt(row, col) == Style::kSmall;
    }
  }
  EXPECT_TRUE(large_bar);
  EXPECT_TRUE(small_bar);
}

TEST(ViewsTest, SelectionMovesTheHistogramToAnotherMethod) {
  Canvas canvas(100, 30);
  UiState ui;
  Frame frame;
  frame.traffic = SampleTraffic();
  HandleKey(ui, Key::kDown, frame.traffic.methods.size());
  DrawScreen(frame, ui, canvas);
  bool histogram_of_selected = false;
  for (int row = 0; row < canvas.height(); ++row) {
    const std::string text = canvas.RowText(row);
    if (text.find("message sizes:") != std::string::npos) {
      histogram_of_selected = text.find("WorkerService/GetStatus") != std::string::npos;
    }
  }
  EXPECT_TRUE(histogram_of_selected) << canvas.Text();
  HandleKey(ui, Key::kDown, frame.traffic.methods.size());  // stays on the last
  EXPECT_EQ(ui.selected_method, 1u);
  HandleKey(ui, Key::kUp, frame.traffic.methods.size());
  HandleKey(ui, Key::kUp, frame.traffic.methods.size());
  EXPECT_EQ(ui.selected_method, 0u);
}

TEST(ViewsTest, TooSmallBelow80x24) {
  for (auto [width, height] : {std::pair{79, 24}, std::pair{80, 23}, std::pair{20, 5}}) {
    Canvas canvas(width, height);
    Frame frame;
    frame.traffic = SampleTraffic();
    DrawScreen(frame, UiState{}, canvas);
    EXPECT_TRUE(Contains(canvas, "terminal too small")) << canvas.Text();
    EXPECT_FALSE(Contains(canvas, "RecvTensor"));
  }
}

TEST(ViewsTest, LargerTerminalsUseTheSpace) {
  Canvas canvas(160, 50);
  Frame frame;
  frame.traffic = SampleTraffic();
  DrawScreen(frame, UiState{}, canvas);
  EXPECT_FALSE(Contains(canvas, "terminal too small"));
  EXPECT_TRUE(Contains(canvas, "q quit"));
  EXPECT_NE(canvas.RowText(49).find("q quit"), std::string::npos);
}

TEST(ViewsTest, KeysSwitchViewsAndToggleHelp) {
  UiState ui;
  HandleKey(ui, Key::kSweep, 0);
  EXPECT_EQ(ui.view, View::kSweep);
  HandleKey(ui, Key::kNextView, 0);
  EXPECT_EQ(ui.view, View::kTransport);
  HandleKey(ui, Key::kNextView, 0);
  EXPECT_EQ(ui.view, View::kHome);
  HandleKey(ui, Key::kNextView, 0);
  EXPECT_EQ(ui.view, View::kWatch);
  HandleKey(ui, Key::kNextView, 0);
  EXPECT_EQ(ui.view, View::kTraffic);
  HandleKey(ui, Key::kWatch, 0);
  EXPECT_EQ(ui.view, View::kWatch);
  HandleKey(ui, Key::kHome, 0);
  EXPECT_EQ(ui.view, View::kHome);
  HandleKey(ui, Key::kTraffic, 0);
  HandleKey(ui, Key::kHelp, 0);
  EXPECT_TRUE(ui.help);
  Canvas canvas(80, 24);
  DrawScreen(Frame{}, ui, canvas);
  EXPECT_TRUE(Contains(canvas, "Keys")) << canvas.Text();
  EXPECT_TRUE(Contains(canvas, "quit (Ctrl-C too)")) << canvas.Text();
  HandleKey(ui, Key::kEscape, 0);
  EXPECT_FALSE(ui.help);
  HandleKey(ui, Key::kQuit, 0);
  EXPECT_TRUE(ui.quit);
}

TEST(ViewsTest, ViewsWithoutSourcesSayHowToGiveOne) {
  Canvas traffic(80, 24), sweep(80, 24), transport(80, 24);
  UiState ui;
  DrawScreen(Frame{}, ui, traffic);
  EXPECT_TRUE(Contains(traffic, "No probe")) << traffic.Text();
  ui.view = View::kSweep;
  DrawScreen(Frame{}, ui, sweep);
  EXPECT_TRUE(Contains(sweep, "No sweep")) << sweep.Text();
  ui.view = View::kTransport;
  DrawScreen(Frame{}, ui, transport);
  EXPECT_TRUE(Contains(transport, "No server")) << transport.Text();
}

TEST(ViewsTest, HomeViewListsTheNewestRecordsWithTotals) {
  HomePanel home;
  home.store_path = "/data/artune.db";
  home.row_counts = {{"sweeps", 40}, {"captures", 1}, {"bench_runs", 0}};
  for (int id = 40; id > 20; --id) {
    db::SweepRecord sweep;
    sweep.id = id;
    sweep.created_at = "2026-11-25T16:40:12.345Z";
    sweep.fabric = "tcp";
    sweep.objective = "bandwidth";
    sweep.workload = "capture:7";
    if (id != 40) sweep.finished_at = "2026-11-25T16:50:00.000Z";
    if (id == 39) {
      sweep.verdict.emplace();
      sweep.verdict->verdict = db::Verdict::kBeatsDefault;
    }
    home.sweeps.push_back(sweep);
  }
  db::CaptureRecord capture;
  capture.id = 3;
  capture.started_at = "2026-11-24T09:00:00.000Z";
  capture.backend = "ebpf";
  capture.process = "python3";
  capture.methods = {
      {"/tensorflow.WorkerService/RecvTensor", "response", 1500, 3 << 20, "skew", 0, 1000, 500},
      {"/tensorflow.WorkerService/RecvTensor", "request", 1500, 90000, "uniform", 1500, 0, 0}};
  home.captures.push_back(capture);

  Canvas canvas(80, 24);
  UiState ui;
  ui.view = View::kHome;
  Frame frame;
  frame.home = home;
  DrawScreen(frame, ui, canvas);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "store /data/artune.db")) << text;
  EXPECT_TRUE(Contains(canvas, "Sweeps (40), newest ")) << text;
  EXPECT_TRUE(Contains(canvas, "2026-11-25 16:40  tcp   bandwidth      capture:7")) << text;
  EXPECT_TRUE(Contains(canvas, "unfinished")) << text;
  EXPECT_TRUE(Contains(canvas, "beats default")) << text;
  EXPECT_TRUE(Contains(canvas, "Captures (1)")) << text;
  EXPECT_TRUE(Contains(canvas, "ebpf  python3")) << text;
  EXPECT_TRUE(Contains(canvas, "3.0 k msgs")) << text;
  EXPECT_TRUE(Contains(canvas, "none yet: artune bench")) << text;
  // 20 sweeps do not fit at 80x24: the newest are shown, the rest cut, and the
  // hints and key line stay on screen.
  EXPECT_FALSE(Contains(canvas, "   21  ")) << text;
  EXPECT_TRUE(Contains(canvas, "q quit")) << text;
  EXPECT_TRUE(Contains(canvas, "--server HOST:PORT")) << text;
}

TEST(ViewsTest, HomeViewWithoutAStoreSaysHowToMakeOne) {
  Frame frame;
  frame.home.store_path = "/nowhere/artune.db";
  frame.home.error = "no store yet: artune probe, sweep and bench record there (or --db)";
  UiState ui;
  ui.view = View::kHome;
  Canvas canvas(80, 24);
  DrawScreen(frame, ui, canvas);
  EXPECT_TRUE(Contains(canvas, "no store yet")) << canvas.Text();
  EXPECT_TRUE(Contains(canvas, "none yet: artune sweep")) << canvas.Text();
}

TEST(ViewsTest, TransportViewShowsProtocolCountersAndRates) {
  TransportModel model;
  model.Configure("127.0.0.1:50051");
  TransportSample first;
  first.by_protocol[0].slices = 100;
  first.by_protocol[0].bytes = 1000;
  first.by_protocol[0].slices_by_bucket[3] = 100;
  first.calls_completed = 50;
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(10);
  model.AddSample(first, t0);
  TransportSample second = first;
  second.by_protocol[0].slices = 300;
  second.by_protocol[0].bytes = 3000;
  second.by_protocol[0].slices_by_bucket[3] = 300;
  second.by_protocol[3].slices = 8;
  second.by_protocol[3].bytes = 8 << 20;
  second.by_protocol[3].slices_by_bucket[20] = 8;
  second.calls_completed = 150;
  model.AddSample(second, t0 + seconds(2));
  TransportSnapshot snapshot = model.Snapshot();
  EXPECT_DOUBLE_EQ(snapshot.rates[0].slices_per_s, 100);
  EXPECT_DOUBLE_EQ(snapshot.rates[3].bytes_per_s, 4 << 20);
  EXPECT_DOUBLE_EQ(snapshot.calls_per_s, 50);
  EXPECT_EQ(snapshot.polls, 2u);

  Canvas canvas(80, 24);
  UiState ui;
  ui.view = View::kTransport;
  Frame frame;
  frame.transport = snapshot;
  DrawScreen(frame, ui, canvas);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "server 127.0.0.1:50051")) << text;
  EXPECT_TRUE(Contains(canvas, "eager")) << text;
  EXPECT_TRUE(Contains(canvas, "chunked-rendezvous")) << text;
  EXPECT_TRUE(Contains(canvas, "4.0 MiB/s")) << text;
  EXPECT_TRUE(Contains(canvas, "calls 150 (50/s)")) << text;
  EXPECT_TRUE(Contains(canvas, "slices by size")) << text;
}

TEST(ViewsTest, TransportErrorIsShownUntilTheNextSuccess) {
  TransportModel model;
  model.Configure("127.0.0.1:1");
  model.SetError("GetStats from the transport server at 127.0.0.1:1 failed: refused");
  Canvas canvas(80, 24);
  UiState ui;
  ui.view = View::kTransport;
  Frame frame;
  frame.transport = model.Snapshot();
  DrawScreen(frame, ui, canvas);
  EXPECT_TRUE(Contains(canvas, "unreachable")) << canvas.Text();
  EXPECT_TRUE(Contains(canvas, "failed: refused")) << canvas.Text();
  model.AddSample(TransportSample{}, std::chrono::steady_clock::now());
  EXPECT_TRUE(model.Snapshot().error.empty());
}

TEST(ViewsTest, SweepViewShowsProgressHeatmapAndBest) {
  SweepInput input;
  input.id = 3;
  input.objective = "latency-p50";
  input.goal = "min";
  input.strategy = "grid";
  input.workload = "scheme:skew";
  input.planned_trials = 4;
  for (auto [eager, chunk, value] :
       {std::tuple{"256B", "64KiB", 12.5}, std::tuple{"4KiB", "64KiB", 30.0},
        std::tuple{"256B", "1MiB", 41.0}}) {
    SweepTrial trial;
    trial.knobs = {{"eager_threshold", eager}, {"chunk_size", chunk}};
    trial.status = db::TrialStatus::kOk;
    trial.validated = true;
    trial.objective = value;
    trial.duration_s = 10;
    input.trials.push_back(trial);
  }
  const Canvas canvas = DrawSweepScreen(input);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "sweep 3  latency-p50 (min)")) << text;
  EXPECT_TRUE(Contains(canvas, "3/4 trials")) << text;
  EXPECT_TRUE(Contains(canvas, "ETA 10 s")) << text;
  EXPECT_TRUE(Contains(canvas, "*12.50")) << text;
  EXPECT_TRUE(Contains(canvas, "chunk_size=64KiB eager_threshold=256B  12.5")) << text;
  EXPECT_TRUE(Contains(canvas, "trial 4 is being measured")) << text;
  // The unmeasured cell (4KiB x 1MiB) is a dot.
  EXPECT_TRUE(Contains(canvas, "30.00      .")) << text;
}

TEST(ViewsTest, AFinishedSweepShowsItsVerdictAndTheDefaultMeasuredAgain) {
  SweepInput input;
  input.id = 5;
  input.objective = "latency-p50";
  input.goal = "min";
  input.strategy = "grid";
  input.finished_at = "2026-01-01T00:00:00.000Z";
  SweepTrial trial;
  trial.knobs = {{"eager_threshold", "4KiB"}, {"chunk_size", "64KiB"}};
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  trial.objective = 20;
  input.trials.push_back(trial);
  input.verdict = db::Verdict::kWithinNoise;
  SweepTrial again = trial;
  again.knobs = {{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}};
  again.objective = 21;
  again.ci_low = 19;
  again.ci_high = 23;
  input.default_remeasured = again;
  SweepPanel panel;
  panel.configured = true;
  panel.summary = SummarizeSweep(input);
  Canvas canvas(80, 24);
  UiState ui;
  ui.view = View::kSweep;
  Frame frame;
  frame.sweep = panel;
  DrawScreen(frame, ui, canvas);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "verdict within noise: the chosen config does not beat the default"))
      << text;
  EXPECT_TRUE(
      Contains(canvas, "again  default chunk_size=512KiB eager_threshold=16KiB  21 [19, 23]"))
      << text;

  // While running (a resumed sweep keeps its old verdict stored) none is shown.
  input.finished_at.clear();
  panel.summary = SummarizeSweep(input);
  frame.sweep = panel;
  Canvas running(80, 24);
  DrawScreen(frame, ui, running);
  EXPECT_FALSE(Contains(running, "verdict")) << running.Text();
}

TEST(ViewsTest, TheChosenConfigMeasuredAgainShowsAboveTheDefaultMeasuredAgain) {
  SweepInput input;
  input.id = 6;
  input.objective = "workload-time";
  input.goal = "min";
  input.strategy = "adaptive";
  input.finished_at = "2026-01-01T00:00:00.000Z";
  SweepTrial trial;
  trial.knobs = {{"eager_threshold", "4KiB"}, {"chunk_size", "64KiB"}};
  trial.status = db::TrialStatus::kOk;
  trial.validated = true;
  trial.objective = 20;
  input.trials.push_back(trial);
  input.verdict = db::Verdict::kBeatsDefault;
  SweepTrial best_again = trial;
  best_again.objective = 18;
  best_again.ci_low = 17;
  best_again.ci_high = 19;
  input.best_remeasured = best_again;
  SweepTrial default_again = trial;
  default_again.knobs = {{"eager_threshold", "16KiB"}, {"chunk_size", "512KiB"}};
  default_again.objective = 24;
  default_again.ci_low = 23;
  default_again.ci_high = 25;
  input.default_remeasured = default_again;
  const Canvas canvas = DrawSweepScreen(input);
  const std::string text = canvas.Text();
  const size_t best_line =
      text.find("again  chosen  chunk_size=64KiB eager_threshold=4KiB  18 [17, 19]");
  const size_t default_line =
      text.find("default chunk_size=512KiB eager_threshold=16KiB  24 [23, 25]");
  ASSERT_NE(best_line, std::string::npos) << text;
  ASSERT_NE(default_line, std::string::npos) << text;
  EXPECT_LT(best_line, default_line) << text;
  // The heatmap moved down a row instead of drawing over the default's line.
  const size_t heatmap = text.find("objective: rows eager_threshold");
  ASSERT_NE(heatmap, std::string::npos) << text;
  EXPECT_LT(default_line, heatmap) << text;
}

// The final round chose 8KiB over the search's best trial (4KiB): the view names
// the chosen config and stars it; the search's best is named as such, unstarred.
TEST(ViewsTest, AFinishedSweepNamesAndStarsTheChosenConfig) {
  SweepInput input;
  input.id = 8;
  input.objective = "workload-time";
  input.goal = "min";
  input.strategy = "adaptive";
  input.finished_at = "2026-01-01T00:00:00.000Z";
  for (const auto& [eager, objective] : {std::pair{"4KiB", 20.0}, std::pair{"8KiB", 21.0}}) {
    SweepTrial trial;
    trial.knobs = {{"eager_threshold", eager}, {"chunk_size", "64KiB"}};
    trial.status = db::TrialStatus::kOk;
    trial.validated = true;
    trial.objective = objective;
    trial.ci_low = objective - 1;
    trial.ci_high = objective + 1;
    input.trials.push_back(trial);
  }
  input.verdict = db::Verdict::kBeatsDefault;
  input.chosen_knobs = "chunk_size=64KiB;eager_threshold=8KiB";
  const Canvas canvas = DrawSweepScreen(input);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "chosen chunk_size=64KiB eager_threshold=8KiB  21 [20, 22]"))
      << text;
  EXPECT_TRUE(Contains(canvas,
                       "search's best chunk_size=64KiB eager_threshold=4KiB  20 [19, 21]  (not "
                       "chosen)"))
      << text;
  EXPECT_TRUE(Contains(canvas, "*21.00")) << text;
  EXPECT_FALSE(Contains(canvas, "*20.00")) << text;
  EXPECT_TRUE(Contains(canvas, "* chosen, . none")) << text;
}

TEST(ViewsTest, FormattersAreShortAndExact) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(12), "12");
  EXPECT_EQ(FormatCount(2.5), "2.5");
  EXPECT_EQ(FormatCount(12345), "12.3 k");
  EXPECT_EQ(FormatCount(4.5e6), "4.5 M");
  EXPECT_EQ(BucketLabel(0), "0");
  EXPECT_EQ(BucketLabel(512), "512");
  EXPECT_EQ(BucketLabel(4096), "4K");
  EXPECT_EQ(BucketLabel(16 << 20), "16M");
}

}  // namespace
}  // namespace artune::dashboard
