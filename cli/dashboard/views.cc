#include "views.h"

#include <algorithm>
#include <array>

#include "view_parts.h"

namespace artune::dashboard {
namespace {

// In View order: HandleKey steps through them by the enum's value.
constexpr std::array<View, 5> kViews = {View::kTraffic, View::kSweep, View::kTransport, View::kHome,
                                        View::kWatch};

void DrawTitleBar(const UiState& ui, Canvas& canvas) {
  canvas.Fill(0, 0, canvas.width(), ' ', Style::kTitle);
  int col = canvas.Put(0, 1, "artune dashboard", Style::kTitle) + 3;
  for (size_t i = 0; i < kViews.size(); ++i) {
    const std::string tab = " " + std::to_string(i + 1) + " " + ViewName(kViews[i]) + " ";
    col = canvas.Put(0, col, tab, kViews[i] == ui.view ? Style::kTabActive : Style::kTitle) + 1;
  }
}

void DrawHints(const UiState& ui, Canvas& canvas) {
  std::string hints = " 1-5 or Tab: views   ? keys   q quit";
  if (ui.view == View::kTraffic) hints = " j/k: method   " + hints.substr(1);
  canvas.Put(canvas.height() - 1, 0, hints, Style::kDim);
}

void DrawHelp(Canvas& canvas) {
  static constexpr std::array<const char*, 11> kLines = {
      "1  t     traffic: per-method rates and size histograms",
      "2  s     sweep: progress, ETA, heatmap, best trial",
      "3  x     transport: per-protocol counters of --server",
      "4  Home  home: the store's newest sweeps, captures, runs",
      "5  w     watch: artune watch's decisions and their evidence",
      "Tab      next view",
      "j  Down  next method (traffic)",
      "k  Up    previous method (traffic)",
      "?        show or hide this help (Esc hides it)",
      "q        quit (Ctrl-C too); the terminal is restored",
      "Colours: green small, yellow medium, red large",
  };
  const int width = 60;
  const int height = static_cast<int>(kLines.size()) + 4;
  const int top = std::max(1, (canvas.height() - height) / 2);
  const int left = std::max(0, (canvas.width() - width) / 2);
  for (int row = 0; row < height; ++row) canvas.Fill(top + row, left, width, ' ');
  canvas.Fill(top, left, width, '-', Style::kHeader);
  canvas.Fill(top + height - 1, left, width, '-', Style::kHeader);
  for (int row = 1; row < height - 1; ++row) {
    canvas.Put(top + row, left, "|", Style::kHeader);
    canvas.Put(top + row, left + width - 1, "|", Style::kHeader);
  }
  canvas.Put(top + 1, left + 2, "Keys", Style::kHeader);
  for (size_t i = 0; i < kLines.size(); ++i) {
    canvas.Put(top + 2 + static_cast<int>(i), left + 2, kLines[i]);
  }
}

}  // namespace

const char* ViewName(View view) {
  switch (view) {
    case View::kTraffic:
      return "traffic";
    case View::kSweep:
      return "sweep";
    case View::kTransport:
      return "transport";
    case View::kHome:
      return "home";
    case View::kWatch:
      return "watch";
  }
  return "?";
}

void HandleKey(UiState& ui, Key key, size_t method_count) {
  switch (key) {
    case Key::kQuit:
      ui.quit = true;
      break;
    case Key::kHelp:
      ui.help = !ui.help;
      break;
    case Key::kEscape:
      ui.help = false;
      break;
    case Key::kTraffic:
      ui.view = View::kTraffic;
      ui.help = false;
      break;
    case Key::kSweep:
      ui.view = View::kSweep;
      ui.help = false;
      break;
    case Key::kTransport:
      ui.view = View::kTransport;
      ui.help = false;
      break;
    case Key::kHome:
      ui.view = View::kHome;
      ui.help = false;
      break;
    case Key::kWatch:
      ui.view = View::kWatch;
      ui.help = false;
      break;
    case Key::kNextView:
      ui.view = kViews[(static_cast<size_t>(ui.view) + 1) % kViews.size()];
      ui.help = false;
      break;
    case Key::kUp:
      if (ui.selected_method > 0) --ui.selected_method;
      break;
    case Key::kDown:
      if (ui.selected_method + 1 < method_count) ++ui.selected_method;
      break;
    case Key::kNone:
    case Key::kOther:
      break;
  }
  // Methods only appear, never vanish, but keep the selection valid regardless.
  if (method_count == 0) {
    ui.selected_method = 0;
  } else if (ui.selected_method >= method_count) {
    ui.selected_method = method_count - 1;
  }
}

void DrawScreen(const Frame& frame, const UiState& ui, Canvas& canvas) {
  if (canvas.width() < kMinWidth || canvas.height() < kMinHeight) {
    const std::string size = std::to_string(canvas.width()) + "x" + std::to_string(canvas.height());
    const std::string need = "need " + std::to_string(kMinWidth) + "x" + std::to_string(kMinHeight);
    canvas.Put(0, 0, "artune dashboard", Style::kTitle);
    canvas.Put(1, 0, "terminal too small: " + size, Style::kWarn);
    canvas.Put(2, 0, need + "; q quits");
    return;
  }
  DrawTitleBar(ui, canvas);
  switch (ui.view) {
    case View::kTraffic:
      DrawTrafficView(frame.traffic, ui.selected_method, canvas);
      break;
    case View::kSweep:
      DrawSweepView(frame.sweep, canvas);
      break;
    case View::kTransport:
      DrawTransportView(frame.transport, canvas);
      break;
    case View::kHome:
      DrawHomeView(frame.home, canvas);
      break;
    case View::kWatch:
      DrawWatchView(frame.watch, canvas);
      break;
  }
  DrawHints(ui, canvas);
  if (ui.help) DrawHelp(canvas);
}

}  // namespace artune::dashboard
