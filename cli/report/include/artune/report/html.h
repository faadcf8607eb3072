// Self-contained HTML documents for `artune report`: one file with its style sheet
// inline, no scripts, fonts, images or network references, so it opens the same
// anywhere (a browser, a mail attachment, a CI artifact).
//
// Every string that comes from data (method names, errors, knob values) goes through
// EscapeHtml before it reaches the document; the builders here escape what they are
// given as text and insert only what they are given as markup (`AddMarkup`, SVG from
// svg.h) as is. Not thread-safe; plain values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::report {

// Text safe inside an element or a quoted attribute: & < > " ' become entities,
// invalid UTF-8 and control characters other than tab and newline become U+FFFD
// (the replacement character), so untrusted bytes can neither open markup nor
// break the document's encoding.
std::string EscapeHtml(std::string_view text);

// A table of text cells (escaped when rendered). `numeric[i]` right-aligns column
// i; a missing entry means left-aligned. Rows shorter than the header are padded
// with empty cells.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;
  std::string caption;  // optional, shown above the table
  // A row drawn bold on a green background (the winner); out of range: none.
  std::optional<size_t> highlighted_row;
};
std::string TableHtml(const Table& table);

// Builds one HTML page: <head> with the title and the inline style sheet, then the
// parts in the order they are added.
class HtmlDocument {
 public:
  explicit HtmlDocument(std::string title);

  void AddHeading(int level, std::string_view text);  // level clamped to 1..4
  void AddParagraph(std::string_view text);
  // A list of "term: value" facts shown as a two-column definition list.
  void AddFacts(const std::vector<std::pair<std::string, std::string>>& facts);
  void AddTable(const Table& table);
  // Markup produced by this library (SVG charts, a legend); never data directly.
  void AddMarkup(std::string markup);
  // Opens and closes a <section> with an escaped id-less heading inside.
  void BeginSection(std::string_view heading);
  void EndSection();

  // The complete document (<!DOCTYPE html> ... </html>).
  std::string Finish() const;

 private:
  std::string title_;
  std::string body_;
  int open_sections_ = 0;
};

// Writes `contents` to `path` whole or not at all: into a temporary file beside it,
// flushed, then renamed over `path`. Errors: kIoError naming the path and the
// system's reason (missing directory, no permission, disk full).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace artune::report
