#include "artune/report/html.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace artune::report {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is invalid
// (bad lead byte, truncated, bad continuation, overlong, surrogate, > U+10FFFF).
size_t ValidSequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  size_t length = 0;
  uint32_t code_point = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong =
      (length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000);
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (overlong || surrogate || code_point > 0x10FFFF) return 0;
  return length;
}

constexpr std::string_view kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #1d1d1d; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 12px 0; }
h2 { font-size: 18px; margin: 24px 0 8px 0; border-bottom: 1px solid #d0d0d0; }
h3 { font-size: 15px; margin: 16px 0 6px 0; }
h4 { font-size: 13px; margin: 12px 0 4px 0; }
section { margin-bottom: 18px; }
table { border-collapse: collapse; margin: 6px 0 12px 0; font-size: 13px; }
caption { text-align: left; font-weight: bold; padding-bottom: 4px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; }
th { background: #eef1f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td { background: #e3f4e1; font-weight: bold; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 13px; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
.legend { font-size: 12px; margin: 4px 0; }
.swatch { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px;
          vertical-align: middle; border: 1px solid #606060; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg text { font-family: sans-serif; }
)css";

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const size_t length = ValidSequenceLength(text, i);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const char c = text[i++];
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += c;
        break;
      default:
        if (static_cast<uint8_t>(c) < 0x20 || c == 0x7F) {
          out += kReplacement;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string TableHtml(const Table& table) {
  std::string out = "<table>";
  if (!table.caption.empty()) out += "<caption>" + EscapeHtml(table.caption) + "</caption>";
  const auto is_numeric = [&](size_t column) {
    return column < table.numeric.size() && table.numeric[column];
  };
  out += "<thead><tr>";
  for (size_t c = 0; c < table.header.size(); ++c) {
    out += is_numeric(c) ? "<th class=\"num\">" : "<th>";
    out += EscapeHtml(table.header[c]) + "</th>";
  }
  out += "</tr></thead><tbody>";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    out += table.highlighted_row == r ? "<tr class=\"best\">" : "<tr>";
    const size_t columns = std::max(row.size(), table.header.size());
    for (size_t c = 0; c < columns; ++c) {
      out += is_numeric(c) ? "<td class=\"num\">" : "<td>";
      if (c < row.size()) out += EscapeHtml(row[c]);
      out += "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table>\n";
  return out;
}

HtmlDocument::HtmlDocument(std::string title) : title_(std::move(title)) {}

void HtmlDocument::AddHeading(int level, std::string_view text) {
  const std::string tag = "h" + std::to_string(std::clamp(level, 1, 4));
  body_ += "<" + tag + ">" + EscapeHtml(text) + "</" + tag + ">\n";
}

void HtmlDocument::AddParagraph(std::string_view text) {
  body_ += "<p>" + EscapeHtml(text) + "</p>\n";
}

void HtmlDocument::AddFacts(const std::vector<std::pair<std::string, std::string>>& facts) {
  body_ += "<dl class=\"facts\">";
  for (const auto& [term, value] : facts) {
    body_ += "<dt>" + EscapeHtml(term) + "</dt><dd>" + EscapeHtml(value) + "</dd>";
  }
  body_ += "</dl>\n";
}

void HtmlDocument::AddTable(const Table& table) { body_ += TableHtml(table); }

void HtmlDocument::AddMarkup(std::string markup) {
  body_ += markup;
  body_ += "\n";
}

void HtmlDocument::BeginSection(std::string_view heading) {
  body_ += "<section>\n";
  ++open_sections_;
  AddHeading(2, heading);
}

void HtmlDocument::EndSection() {
  if (open_sections_ == 0) return;
  body_ += "</section>\n";
  --open_sections_;
}

std::string HtmlDocument::Finish() const {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += EscapeHtml(title_);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out += body_;
  for (int i = 0; i < open_sections_; ++i) out += "</section>\n";
  out += "</body>\n</html>\n";
  return out;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::string temporary = path + ".tmp-XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) return Status::FromErrno("cannot create a file beside " + path, errno);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      unlink(temporary.c_str());
      return Status::FromErrno("cannot write " + temporary, error);
    }
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; a report is an ordinary document meant to be shared, so
  // it gets the mode of a file saved under the usual umask 022.
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return Status::FromErrno("cannot write " + temporary, error);
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return Status::FromErrno("cannot rename " + temporary + " to " + path, error);
  }
  return Status::Ok();
}

}  // namespace artune::report
