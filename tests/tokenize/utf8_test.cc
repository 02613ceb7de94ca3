#include "padless/tokenize/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace padless::tokenize {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

struct Case {
  const char* name;
  std::string input;
  std::string want;
  int64_t replaced;
};

TEST(SanitizeUtf8Test, TableOfCases) {
  const Case cases[] = {
      {"ascii", "plain text", "plain text", 0},
      {"valid multibyte", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
       "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", 0},
      {"lone continuation",
       "a\x80"
       "b",
       "a" + kFffd + "b", 1},
      {"truncated at end", "ab\xE2\x82", "ab" + kFffd, 1},
      {"truncated mid",
       "\xE2\x82"
       "x",
       kFffd + "x", 1},
      {"overlong slash", "\xC0\xAF", kFffd + kFffd, 2},
      {"surrogate", "\xED\xA0\x80", kFffd + kFffd + kFffd, 3},
      {"above max", "\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd, 4},
      {"latin-1 byte", "na\xEFve", "na" + kFffd + "ve", 1},
      {"0xff", "\xFF\xFE", kFffd + kFffd, 2},
      {"empty", "", "", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string s = c.input;
    EXPECT_EQ(IsValidUtf8(s), c.replaced == 0);
    EXPECT_EQ(SanitizeUtf8(&s), c.replaced);
    EXPECT_EQ(s, c.want);
    EXPECT_TRUE(IsValidUtf8(s));
  }
}

TEST(SanitizeUtf8Test, EveryByteStringBecomesValid) {
  // All two-byte strings: whatever comes in, the output is valid UTF-8.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      std::string s = {static_cast<char>(a), static_cast<char>(b)};
      SanitizeUtf8(&s);
      ASSERT_TRUE(IsValidUtf8(s)) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace padless::tokenize
