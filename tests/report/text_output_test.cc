#include "padless/report/text_output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "padless/report/svg.h"

namespace padless::report {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return static_cast<bool>(std::ifstream(path)); }

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/padless_report_", getpid(), "_", name);
}

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

TEST(WriteFileAtomicallyTest, WritesContentAndLeavesNoTemporary) {
  const std::string path = TempPath("write.csv");
  std::remove(path.c_str());
  const std::string content = std::string("x,y\n1,2\n") + std::string(1, '\0') + "tail";
  ASSERT_TRUE(WriteFileAtomically(path, content).ok());
  EXPECT_EQ(ReadAll(path), content);
  EXPECT_FALSE(Exists(path + ".tmp"));
  // Overwrites an existing file completely (shorter content: no stale tail).
  ASSERT_TRUE(WriteFileAtomically(path, [](std::ostream& out) { out << "new"; }).ok());
  EXPECT_EQ(ReadAll(path), "new");
  std::remove(path.c_str());
}

TEST(WriteFileAtomicallyTest, MissingDirectoryIsUnavailableAndTouchesNothing) {
  const std::string path = TempPath("no_such_dir/out.svg");
  const absl::Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("no_such_dir/out.svg.tmp"), std::string::npos) << s;
  EXPECT_FALSE(Exists(path));
}

TEST(WriteFileAtomicallyTest, FailedWriteIsDataLossAndKeepsTheOldFile) {
  const std::string path = TempPath("keep.txt");
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  const absl::Status s = WriteFileAtomically(path, [](std::ostream& out) {
    out << "partial";
    out.setstate(std::ios::badbit);  // As a full disk would.
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_FALSE(Exists(path + ".tmp"));
  std::remove(path.c_str());
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
}  // namespace padless::report
