#include "terminal.h"

#include <fcntl.h>
#include <ncurses.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace artune::dashboard {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void RecordStopSignal(int signal_number) { g_stop_signal = signal_number; }

constexpr int kStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};

}  // namespace

Result<std::unique_ptr<StdioRedirect>> StdioRedirect::Start(const std::string& log_path) {
  if (isatty(STDIN_FILENO) != 1 || isatty(STDOUT_FILENO) != 1) {
    return Status::InvalidArgument(
        "artune dashboard needs a terminal on stdin and stdout (use `artune probe` or "
        "`artune results` for output to a pipe or file)");
  }
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::FromErrno("opening the dashboard log " + log_path, errno);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return Status::FromErrno("opening /dev/null", errno);
  }
  std::unique_ptr<StdioRedirect> redirect(new StdioRedirect());
  std::fflush(stdout);
  std::fflush(stderr);
  for (int fd = 0; fd < 3; ++fd) redirect->saved_[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  close(null_fd);
  close(log_fd);
  return redirect;
}

StdioRedirect::~StdioRedirect() {
  std::fflush(stdout);
  std::fflush(stderr);
  for (int fd = 0; fd < 3; ++fd) {
    if (saved_[fd] < 0) continue;
    dup2(saved_[fd], fd);
    close(saved_[fd]);
  }
}

StopSignalScope::StopSignalScope() {
  g_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = RecordStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read returns and the loop looks
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &action, &previous_[i]);
}

StopSignalScope::~StopSignalScope() {
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &previous_[i], nullptr);
}

int StopSignalScope::received() { return g_stop_signal; }

struct Terminal::Impl {
  FILE* input = nullptr;
  FILE* output = nullptr;
  SCREEN* screen = nullptr;
};

Result<std::unique_ptr<Terminal>> Terminal::Open(int input_fd, int output_fd, bool want_colour) {
  std::unique_ptr<Terminal> terminal(new Terminal());
  terminal->impl_ = std::make_unique<Impl>();
  Impl& impl = *terminal->impl_;
  impl.input = fdopen(dup(input_fd), "r");
  impl.output = fdopen(dup(output_fd), "w");
  if (impl.input == nullptr || impl.output == nullptr) {
    return Status::FromErrno("opening the terminal for ncurses", errno);
  }
  impl.screen = newterm(nullptr, impl.output, impl.input);
  if (impl.screen == nullptr) {
    const char* term = std::getenv("TERM");
    return Status::Unavailable(std::string("ncurses cannot drive terminal type '") +
                               (term ? term : "(TERM unset)") +
                               "': set TERM to a known type such as xterm-256color");
  }
  set_term(impl.screen);
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
  const char* no_colour = std::getenv("NO_COLOR");
  terminal->colour_ = want_colour && has_colors() && (no_colour == nullptr || no_colour[0] == '\0');
  if (terminal->colour_) {
    start_color();
    use_default_colors();
    struct PairSpec {
      Style style;
      short foreground, background;
    };
    const PairSpec pairs[] = {
        {Style::kTitle, COLOR_BLACK, COLOR_CYAN},
        {Style::kTabActive, COLOR_BLACK, COLOR_YELLOW},
        {Style::kHeader, COLOR_CYAN, -1},
        {Style::kSmall, COLOR_GREEN, -1},
        {Style::kMedium, COLOR_YELLOW, -1},
        {Style::kLarge, COLOR_RED, -1},
        {Style::kGood, COLOR_GREEN, -1},
        {Style::kWarn, COLOR_YELLOW, -1},
        {Style::kError, COLOR_RED, -1},
        {Style::kHeat0, COLOR_BLACK, COLOR_RED},
        {Style::kHeat1, COLOR_BLACK, COLOR_MAGENTA},
        {Style::kHeat2, COLOR_BLACK, COLOR_YELLOW},
        {Style::kHeat3, COLOR_BLACK, COLOR_CYAN},
        {Style::kHeat4, COLOR_BLACK, COLOR_GREEN},
        {Style::kBest, COLOR_BLACK, COLOR_WHITE},
    };
    for (const PairSpec& pair : pairs) {
      init_pair(static_cast<short>(static_cast<int>(pair.style) + 1), pair.foreground,
                pair.background);
    }
  }
  return terminal;
}

Terminal::~Terminal() {
  if (impl_ == nullptr) return;
  if (impl_->screen != nullptr) {
    endwin();
    delscreen(impl_->screen);
  }
  if (impl_->input != nullptr) std::fclose(impl_->input);
  if (impl_->output != nullptr) std::fclose(impl_->output);
}

int Terminal::width() const { return COLS; }
int Terminal::height() const { return LINES; }

int Terminal::AttributesOf(Style style) const {
  if (colour_) {
    int attributes = style == Style::kNormal ? A_NORMAL : COLOR_PAIR(static_cast<int>(style) + 1);
    if (style == Style::kDim) attributes = A_DIM;
    if (style == Style::kTabActive || style == Style::kError || style == Style::kBest ||
        style == Style::kHeader) {
      attributes |= A_BOLD;
    }
    return attributes;
  }
  switch (style) {
    case Style::kTitle:
      return A_REVERSE;
    case Style::kTabActive:
    case Style::kHeader:
    case Style::kError:
      return A_BOLD;
    case Style::kDim:
      return A_DIM;
    case Style::kBest:
      return A_REVERSE | A_BOLD;
    default:
      return A_NORMAL;
  }
}

Key Terminal::ReadKey(int timeout_ms, bool& resized) {
  timeout(timeout_ms);
  const int key = getch();
  switch (key) {
    case ERR:
      return Key::kNone;
    case KEY_RESIZE:
      resized = true;
      return Key::kNone;
    case 'q':
    case 'Q':
      return Key::kQuit;
    case '?':
    case 'h':
      return Key::kHelp;
    case 27:
      return Key::kEscape;
    case '1':
    case 't':
      return Key::kTraffic;
    case '2':
    case 's':
      return Key::kSweep;
    case '3':
    case 'x':
      return Key::kTransport;
    case '4':
    case KEY_HOME:
      return Key::kHome;
    case '5':
    case 'w':
      return Key::kWatch;
    case '\t':
      return Key::kNextView;
    case KEY_UP:
    case 'k':
      return Key::kUp;
    case KEY_DOWN:
    case 'j':
      return Key::kDown;
    default:
      return Key::kOther;
  }
}

void Terminal::Present(const Canvas& canvas) {
  werase(stdscr);
  for (int row = 0; row < canvas.height(); ++row) {
    int col = 0;
    while (col < canvas.width()) {
      // One run of cells with the same style per call.
      const Style style = canvas.StyleAt(row, col);
      std::string run;
      const int start = col;
      while (col < canvas.width() && canvas.StyleAt(row, col) == style) {
        run += canvas.CharAt(row, col);
        ++col;
      }
      const int attributes = AttributesOf(style);
      attron(attributes);
      // The bottom-right cell makes ncurses try to scroll (ERR, harmless): skip it.
      const int length = (row == LINES - 1 && col >= COLS) ? static_cast<int>(run.size()) - 1
                                                           : static_cast<int>(run.size());
      if (length > 0) mvaddnstr(row, start, run.c_str(), length);
      attroff(attributes);
    }
  }
  wnoutrefresh(stdscr);
  doupdate();
}

}  // namespace artune::dashboard
