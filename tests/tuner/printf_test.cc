// artune::Printf (artune/base/number_text.h): printf's formatting into a string,
// also past the 128 bytes it formats on the stack.
#include <gtest/gtest.h>

#include <string>

#include "artune/base/number_text.h"

namespace artune {
namespace {

TEST(Printf, FormatsShortText) {
  EXPECT_EQ(Printf("%g", 0.25), "0.25");
  EXPECT_EQ(Printf("%.2f s", 1.005), "1.00 s");
  EXPECT_EQ(Printf("%.1f", -3.0), "-3.0");
  EXPECT_EQ(Printf("%s", ""), "");
}

TEST(Printf, FormatsTextLongerThanItsStackBuffer) {
  const std::string long_word(300, 'x');
  EXPECT_EQ(Printf("<%s>", long_word.c_str()), "<" + long_word + ">");
  const std::string exactly(128, 'y');  // one past the stack buffer with the NUL
  EXPECT_EQ(Printf("%s", exactly.c_str()), exactly);
}

}  // namespace
}  // namespace artune
