// What a view draws into: a grid of ASCII cells, each with a style. The ncurses
// layer (terminal.h) copies a Canvas to the screen; tests read it back as text.
// Views never call ncurses, so they are unit-tested without a terminal.
//
// Every write is clipped to the grid: a view may write past the edge safely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace artune::dashboard {

// Semantic styles; the terminal maps them to colours (or to bold/reverse/plain
// attributes when colour is off).
enum class Style : uint8_t {
  kNormal,
  kTitle,      // the top bar
  kTabActive,  // the current view's tab
  kHeader,     // table headers, section titles
  kDim,        // secondary text
  kSmall,      // TF-gRPC-Bench size classes: [1 B, 1 KiB)
  kMedium,     // [1 KiB, 1 MiB)
  kLarge,      // [1 MiB, ...)
  kGood,
  kWarn,
  kError,
  kHeat0,  // heatmap, worst ...
  kHeat1,
  kHeat2,
  kHeat3,
  kHeat4,  // ... best
  kBest,   // the marked best cell
};
inline constexpr int kStyleCount = static_cast<int>(Style::kBest) + 1;

class Canvas {
 public:
  Canvas(int width, int height);

  int width() const { return width_; }
  int height() const { return height_; }

  // Writes `text` from (row, col), clipped to the grid; non-printable bytes become
  // '?'. Returns the column after the text (even when clipped).
  int Put(int row, int col, std::string_view text, Style style = Style::kNormal);
  void Fill(int row, int col, int count, char c, Style style = Style::kNormal);
  // Gives the style to `count` cells from (row, col), keeping their characters.
  void Paint(int row, int col, int count, Style style);

  char CharAt(int row, int col) const;
  Style StyleAt(int row, int col) const;
  // One row as text without trailing spaces; Text(): all rows, '\n'-separated.
  std::string RowText(int row) const;
  std::string Text() const;

 private:
  bool Inside(int row, int col) const {
    return row >= 0 && row < height_ && col >= 0 && col < width_;
  }
  int width_;
  int height_;
  std::vector<char> chars_;
  std::vector<Style> styles_;
};

}  // namespace artune::dashboard
