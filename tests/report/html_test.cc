#include "artune/report/html.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace artune::report {
namespace {

TEST(EscapeHtml, EscapesMarkupCharacters) {
  EXPECT_EQ(EscapeHtml("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(EscapeHtml("/tf.Worker/RecvTensor"), "/tf.Worker/RecvTensor");
  EXPECT_EQ(EscapeHtml(""), "");
}

TEST(EscapeHtml, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(EscapeHtml("µs ★ 😀"), "µs ★ 😀");
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeHtml("a\xFF"
                       "b"),
            "a" + replacement + "b");
  EXPECT_EQ(EscapeHtml("\xC3"), replacement);                                      // truncated
  EXPECT_EQ(EscapeHtml("\xC0\xBC"), replacement + replacement);                    // overlong '<'
  EXPECT_EQ(EscapeHtml("\xED\xA0\x80"), replacement + replacement + replacement);  // surrogate
  EXPECT_EQ(EscapeHtml("\xF4\x90\x80\x80").find('<'), std::string::npos);
}

TEST(EscapeHtml, ReplacesControlCharactersButKeepsTabAndNewline) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeHtml(std::string("a\0b", 3)), "a" + replacement + "b");
  EXPECT_EQ(EscapeHtml("a\x1b[31m"), "a" + replacement + "[31m");
  EXPECT_EQ(EscapeHtml("a\tb\nc"), "a\tb\nc");
}

TEST(TableHtml, EscapesCellsAlignsNumbersAndMarksTheHighlightedRow) {
  Table table;
  table.caption = "trials <all>";
  table.header = {"method", "count"};
  table.numeric = {false, true};
  table.rows = {{"<b>bold</b>", "12"}, {"/a/B"}};
  table.highlighted_row = 1;
  const std::string html = TableHtml(table);
  EXPECT_NE(html.find("<caption>trials &lt;all&gt;</caption>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;b&gt;bold&lt;/b&gt;</td><td class=\"num\">12</td>"),
            std::string::npos);
  // The short row is padded to the header's width, and it is the highlighted one.
  EXPECT_NE(html.find("<tr class=\"best\"><td>/a/B</td><td class=\"num\"></td></tr>"),
            std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
}

TEST(HtmlDocument, IsSelfContainedAndEscapesItsText) {
  HtmlDocument document("capture <1>");
  document.AddHeading(9, "heading & more");
  document.BeginSection("section \"one\"");
  document.AddParagraph("<img src=x onerror=alert(1)>");
  document.AddFacts({{"key<", "value>"}});
  document.AddMarkup("<svg width=\"1\" height=\"1\"></svg>");
  const std::string html = document.Finish();  // the open section is closed for us
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("<title>capture &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h4>heading &amp; more</h4>"), std::string::npos);
  EXPECT_NE(html.find("<h2>section &quot;one&quot;</h2>"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<dt>key&lt;</dt><dd>value&gt;</dd>"), std::string::npos);
  EXPECT_NE(html.find("<svg width=\"1\" height=\"1\"></svg>"), std::string::npos);
  EXPECT_NE(html.find("</section>\n</body>"), std::string::npos);
  // Nothing the page would fetch: no scripts, style sheet links or remote URLs.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(WriteFileAtomically, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("report_write_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "report.html").string();
  ASSERT_TRUE(WriteFileAtomically(path, "first version, longer").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(ReadFile(path), "second");
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

TEST(WriteFileAtomically, NamesThePathWhenTheDirectoryIsMissing) {
  const Status status = WriteFileAtomically("/nonexistent-artune-dir/report.html", "x");
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_NE(status.message().find("/nonexistent-artune-dir/report.html"), std::string::npos);
}

}  // namespace
}  // namespace artune::report
