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

// Each of `texts` is somewhere on the canvas.
void ExpectShows(const Canvas& canvas, std::initializer_list<std::string> texts) {
  for (const std::string& text : texts) {
    EXPECT_TRUE(Contains(canvas, text)) << "no \"" << text << "\" in\n" << canvas.Text();
  }
}

// `frame` drawn with `view` in front on an 80 x 24 screen.
Canvas DrawView(const Frame& frame, View view) {
  Canvas canvas(80, 24);
  UiState ui;
  ui.view = view;
  DrawScreen(frame, ui, canvas);
  return canvas;
}

// The sweep view of `input` on an 80 x 24 screen.
Canvas DrawSweepScreen(const SweepInput& input) {
  Frame frame;
  frame.sweep.configured = true;
  frame.sweep.summary = SummarizeSweep(input);
  return DrawView(frame, View::kSweep);
}

// A sweep finished at the start of 2026, of latency-like objective (lower is better).
SweepInput FinishedSweep(int64_t id, const std::string& objective, const std::string& strategy) {
  return {.id = id,
          .finished_at = "2026-01-01T00:00:00.000Z",
          .objective = objective,
          .goal = "min",
          .strategy = strategy};
}

// A validated trial of eager threshold x chunk size, its interval [low, high].
SweepTrial OkTrial(const std::string& eager, const std::string& chunk, double objective,
                   double low = 0, double high = 0) {
  return {.knobs = {{"eager_threshold", eager}, {"chunk_size", chunk}},
          .status = db::TrialStatus::kOk,
          .validated = true,
          .objective = objective,
          .ci_low = low,
          .ci_high = high};
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
  ExpectShows(canvas, {"artune dashboard", "1 traffic"});
  EXPECT_EQ(canvas.StyleAt(0, static_cast<int>(canvas.RowText(0).find("1 traffic"))),
            Style::kTabActive);
  ExpectShows(canvas, {"WorkerService/RecvTensor", "WorkerService/GetStatus", "RPC/s"});
  // 30 requests in second 0, window of one second at 1.5 s.
  ExpectShows(canvas, {"  30  ", "message sizes:", "iovec sizes (all send calls)"});
  EXPECT_TRUE(Contains(canvas, "   1M #")) << text;  // the 1 MiB responses' bucket
  ExpectShows(canvas, {"running", "q quit"});
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
  // Each key, then the view it leads to.
  const std::pair<Key, View> steps[] = {
      {Key::kSweep, View::kSweep},      {Key::kNextView, View::kTransport},
      {Key::kNextView, View::kHome},    {Key::kNextView, View::kWatch},
      {Key::kNextView, View::kTraffic}, {Key::kWatch, View::kWatch},
      {Key::kHome, View::kHome},        {Key::kTraffic, View::kTraffic}};
  for (size_t i = 0; i < std::size(steps); ++i) {
    HandleKey(ui, steps[i].first, 0);
    EXPECT_EQ(ui.view, steps[i].second) << "after key " << i;
  }
  HandleKey(ui, Key::kHelp, 0);
  EXPECT_TRUE(ui.help);
  Canvas canvas(80, 24);
  DrawScreen(Frame{}, ui, canvas);
  ExpectShows(canvas, {"Keys", "quit (Ctrl-C too)"});
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

  Frame frame;
  frame.home = home;
  const Canvas canvas = DrawView(frame, View::kHome);
  const std::string text = canvas.Text();
  ExpectShows(canvas,
              {"store /data/artune.db", "Sweeps (40), newest ",
               "2026-11-25 16:40  tcp   bandwidth      capture:7", "unfinished", "beats default",
               "Captures (1)", "ebpf  python3", "3.0 k msgs", "none yet: artune bench"});
  // 20 sweeps do not fit at 80x24: the newest are shown, the rest cut, and the
  // hints and key line stay on screen.
  EXPECT_FALSE(Contains(canvas, "   21  ")) << text;
  ExpectShows(canvas, {"q quit", "--server HOST:PORT"});
}

TEST(ViewsTest, HomeViewWithoutAStoreSaysHowToMakeOne) {
  Frame frame;
  frame.home.store_path = "/nowhere/artune.db";
  frame.home.error = "no store yet: artune probe, sweep and bench record there (or --db)";
  UiState ui;
  ui.view = View::kHome;
  Canvas canvas(80, 24);
  DrawScreen(frame, ui, canvas);
  ExpectShows(canvas, {"no store yet", "none yet: artune sweep"});
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

  Frame frame;
  frame.transport = snapshot;
  const Canvas canvas = DrawView(frame, View::kTransport);
  const std::string text = canvas.Text();
  ExpectShows(canvas, {"server 127.0.0.1:50051", "eager", "chunked-rendezvous", "4.0 MiB/s",
                       "calls 150 (50/s)", "slices by size"});
}

TEST(ViewsTest, TransportErrorIsShownUntilTheNextSuccess) {
  TransportModel model;
  model.Configure("127.0.0.1:1");
  model.SetError("GetStats from the transport server at 127.0.0.1:1 failed: refused");
  Frame frame;
  frame.transport = model.Snapshot();
  const Canvas canvas = DrawView(frame, View::kTransport);
  ExpectShows(canvas, {"unreachable", "failed: refused"});
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
    SweepTrial trial = OkTrial(eager, chunk, value);
    trial.duration_s = 10;
    input.trials.push_back(trial);
  }
  const Canvas canvas = DrawSweepScreen(input);
  const std::string text = canvas.Text();
  ExpectShows(canvas, {"sweep 3  latency-p50 (min)", "3/4 trials", "ETA 10 s", "*12.50",
                       "chunk_size=64KiB eager_threshold=256B  12.5", "trial 4 is being measured"});
  // The unmeasured cell (4KiB x 1MiB) is a dot.
  EXPECT_TRUE(Contains(canvas, "30.00      .")) << text;
}

TEST(ViewsTest, AFinishedSweepShowsItsVerdictAndTheDefaultMeasuredAgain) {
  SweepInput input = FinishedSweep(5, "latency-p50", "grid");
  input.trials.push_back(OkTrial("4KiB", "64KiB", 20));
  input.verdict = db::Verdict::kWithinNoise;
  input.default_remeasured = OkTrial("16KiB", "512KiB", 21, 19, 23);
  const Canvas canvas = DrawSweepScreen(input);
  const std::string text = canvas.Text();
  EXPECT_TRUE(Contains(canvas, "verdict within noise: the chosen config does not beat the default"))
      << text;
  EXPECT_TRUE(
      Contains(canvas, "again  default chunk_size=512KiB eager_threshold=16KiB  21 [19, 23]"))
      << text;

  // While running (a resumed sweep keeps its old verdict stored) none is shown.
  input.finished_at.clear();
  const Canvas running = DrawSweepScreen(input);
  EXPECT_FALSE(Contains(running, "verdict")) << running.Text();
}

TEST(ViewsTest, TheChosenConfigMeasuredAgainShowsAboveTheDefaultMeasuredAgain) {
  SweepInput input = FinishedSweep(6, "workload-time", "adaptive");
  input.trials.push_back(OkTrial("4KiB", "64KiB", 20));
  input.verdict = db::Verdict::kBeatsDefault;
  input.best_remeasured = OkTrial("4KiB", "64KiB", 18, 17, 19);
  input.default_remeasured = OkTrial("16KiB", "512KiB", 24, 23, 25);
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
  SweepInput input = FinishedSweep(8, "workload-time", "adaptive");
  input.trials = {OkTrial("4KiB", "64KiB", 20, 19, 21), OkTrial("8KiB", "64KiB", 21, 20, 22)};
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
