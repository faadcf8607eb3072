#include "dashboard.h"

#include <memory>

#include "home_source.h"
#include "probe_source.h"
#include "terminal.h"
#include "transport_source.h"
#include "watch_source.h"

namespace artune::dashboard {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kSweepPollInterval{1000};
// Enough records of each kind for a tall terminal; the view shows what fits.
constexpr int kHomeRows = 12;
// Decisions take two or three rows each: enough for a tall terminal.
constexpr int kWatchRows = 40;

// The views read from the store, polled together once a kSweepPollInterval.
struct StoreViews {
  std::optional<SweepSource> sweep;
  std::optional<HomeSource> home;
  std::optional<WatchSource> watch;

  explicit StoreViews(const DashboardOptions& options) {
    if (options.sweep) sweep.emplace(options.database_path, *options.sweep);
    if (options.home) home.emplace(options.database_path, kHomeRows);
    if (options.watch) watch.emplace(options.database_path, kWatchRows);
  }
  bool any() const { return sweep || home || watch; }
  void Poll(Frame& frame) {
    if (sweep) frame.sweep = sweep->Poll();
    if (home) frame.home = home->Poll();
    if (watch) frame.watch = watch->Poll();
  }
};

}  // namespace

Result<DashboardResult> RunDashboard(const DashboardOptions& options) {
  StopSignalScope stop_signals;
  ARTUNE_ASSIGN_OR_RETURN(auto redirect, StdioRedirect::Start(options.log_path));

  TrafficModel traffic;
  TransportModel transport;
  std::unique_ptr<ProbeSource> probe;
  std::unique_ptr<TransportSource> transport_source;
  if (options.probe) {
    ARTUNE_ASSIGN_OR_RETURN(probe,
                            ProbeSource::Start(*options.probe, options.server_port, traffic));
  }
  if (!options.server.empty()) {
    transport_source = TransportSource::Start(options.server, options.poll_interval, transport);
  }
  StoreViews store_views(options);

  DashboardResult result;
  {
    ARTUNE_ASSIGN_OR_RETURN(
        auto terminal,
        Terminal::Open(redirect->terminal_input(), redirect->terminal_output(), options.colour));
    UiState ui;
    ui.view = options.initial_view;
    Frame frame;
    const auto redraw_interval =
        std::chrono::milliseconds(1000 / std::max(1, options.max_redraws_per_s));
    Clock::time_point last_draw{};
    Clock::time_point last_sweep_poll{};
    bool dirty = true;
    while (!ui.quit) {
      if (int signal_number = StopSignalScope::received(); signal_number != 0) {
        result.stop_signal = signal_number;
        break;
      }
      const Clock::time_point now = Clock::now();
      if (store_views.any() && now - last_sweep_poll >= kSweepPollInterval) {
        store_views.Poll(frame);
        last_sweep_poll = now;
        dirty = true;
      }
      if (dirty || now - last_draw >= redraw_interval) {
        frame.traffic = traffic.Snapshot(now);
        frame.transport = transport.Snapshot();
        // Keep the selection valid as methods appear.
        HandleKey(ui, Key::kNone, frame.traffic.methods.size());
        Canvas canvas(terminal->width(), terminal->height());
        DrawScreen(frame, ui, canvas);
        terminal->Present(canvas);
        last_draw = now;
        dirty = false;
      }
      // Wait for a key until the next scheduled redraw, then take every key
      // already typed before drawing once.
      const auto until_redraw = redraw_interval - (Clock::now() - last_draw);
      int timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(until_redraw).count());
      timeout_ms = std::max(timeout_ms, 1);
      for (;;) {
        bool resized = false;
        const Key key = terminal->ReadKey(timeout_ms, resized);
        if (key == Key::kNone && !resized) break;
        HandleKey(ui, key, frame.traffic.methods.size());
        dirty = true;
        timeout_ms = 0;
        if (ui.quit) break;
      }
    }
  }  // endwin here, before the sources stop (a --exec command may take a while)
  if (probe) {
    probe->Stop();
    result.command_exit_code = probe->command_exit_code();
  }
  if (transport_source) transport_source->Stop();
  return result;
}

}  // namespace artune::dashboard
