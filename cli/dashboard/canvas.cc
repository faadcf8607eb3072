#include "canvas.h"

#include <algorithm>
#include <cstddef>

namespace artune::dashboard {

Canvas::Canvas(int width, int height)
    : width_(std::max(width, 0)),
      height_(std::max(height, 0)),
      chars_(static_cast<size_t>(width_) * static_cast<size_t>(height_), ' '),
      styles_(chars_.size(), Style::kNormal) {}

int Canvas::Put(int row, int col, std::string_view text, Style style) {
  for (char c : text) {
    if (Inside(row, col)) {
      const size_t index = static_cast<size_t>(row) * width_ + col;
      chars_[index] = (c >= 32 && c < 127) ? c : '?';
      styles_[index] = style;
    }
    ++col;
  }
  return col;
}

void Canvas::Fill(int row, int col, int count, char c, Style style) {
  for (int i = 0; i < count; ++i) Put(row, col + i, std::string_view(&c, 1), style);
}

void Canvas::Paint(int row, int col, int count, Style style) {
  for (int i = 0; i < count; ++i) {
    if (Inside(row, col + i)) styles_[static_cast<size_t>(row) * width_ + col + i] = style;
  }
}

char Canvas::CharAt(int row, int col) const {
  return Inside(row, col) ? chars_[static_cast<size_t>(row) * width_ + col] : ' ';
}

Style Canvas::StyleAt(int row, int col) const {
  return Inside(row, col) ? styles_[static_cast<size_t>(row) * width_ + col] : Style::kNormal;
}

std::string Canvas::RowText(int row) const {
  if (row < 0 || row >= height_) return "";
  std::string text(chars_.begin() + static_cast<ptrdiff_t>(row) * width_,
                   chars_.begin() + static_cast<ptrdiff_t>(row + 1) * width_);
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

std::string Canvas::Text() const {
  std::string text;
  for (int row = 0; row < height_; ++row) {
    if (row > 0) text += '\n';
    text += RowText(row);
  }
  return text;
}

}  // namespace artune::dashboard
