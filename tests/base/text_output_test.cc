#include "padless/base/text_output.h"

#include <string>

#include "gtest/gtest.h"
#include "padless/base/svg.h"

namespace padless::base {
namespace {

TEST(XmlEscapeTest, EscapesMarkupCharactersOnly) {
  EXPECT_EQ(XmlEscape(""), "");
  EXPECT_EQ(XmlEscape("plain text 123"), "plain text 123");
  EXPECT_EQ(XmlEscape("a<b>&\"c\"'"), "a&lt;b&gt;&amp;&quot;c&quot;'");
  // '&' is escaped once, not again inside the entities it produced.
  EXPECT_EQ(XmlEscape("&lt;"), "&amp;lt;");
}

TEST(CsvFieldTest, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("bf16 ckpt=all"), "bf16 ckpt=all");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
}

TEST(SvgHeaderTest, OpensTheDocumentWithOrWithoutBackground) {
  EXPECT_EQ(SvgHeader(760, 300, 13),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"300\" "
            "font-family=\"sans-serif\" font-size=\"13\">\n"
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  EXPECT_EQ(SvgHeader(800, 400, 12, /*white_background=*/false),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"400\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n");
}

}  // namespace
}  // namespace padless::base
