// The reader and encode flags (cli/data_flags.h) are parsed once for every subcommand that reads
// data: a bad value is a usage error (exit 2) with the same message, naming the flag, in each.
// The files named need not exist: flags are checked before any file is opened.
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::cli {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using testing::RunPadless;

// The arguments each subcommand needs to get as far as its data flags.
std::vector<std::string> Command(const std::string& name) {
  if (name == "train") return {"train", "--data", "x.tsv", "--out", "/nonexistent/out"};
  if (name == "eval") return {"eval", "--model", "/nonexistent/m", "--data", "x.tsv"};
  if (name == "predict") return {"predict", "--model", "/nonexistent/m", "--data", "x.tsv"};
  if (name == "tokenize") return {"tokenize", "encode", "--model", "m.model", "--data", "x.tsv"};
  return {"bench-padding", "--model", "m.model", "--data", "x.tsv"};
}

// The usage message from where it names `flag` up to the "(see ... --help)" hint.
std::string UsageMessage(const std::string& err, const std::string& flag) {
  const size_t begin = err.find(flag);
  const size_t end = err.find(" (see `padless");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return err;
  return err.substr(begin, end - begin);
}

// Runs every subcommand of `commands` with `flag value` and expects exit 2 and one message.
void ExpectSameUsageError(const std::vector<std::string>& commands, const std::string& flag,
                          const std::string& value, const std::string& expected) {
  std::string first;
  for (const std::string& command : commands) {
    std::vector<std::string> args = Command(command);
    args.push_back(flag);
    args.push_back(value);
    const CliResult r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 2) << command << " " << flag << " " << value << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(expected)) << command;
    const std::string message = UsageMessage(r.err, flag);
    if (first.empty()) first = message;
    EXPECT_EQ(message, first) << command << ": the same value gives the same message everywhere";
  }
}

TEST(DataFlagsTest, BadFormatIsAUsageErrorEverywhere) {
  ExpectSameUsageError({"train", "eval", "predict", "tokenize", "bench-padding"}, "--format", "xml",
                       "--format: unknown data format 'xml'");
}

TEST(DataFlagsTest, HeadFractionOutOfRangeIsAUsageErrorEverywhere) {
  for (const std::string value : {"1.5", "-0.1"}) {
    ExpectSameUsageError({"train", "eval", "tokenize", "bench-padding"}, "--head-fraction", value,
                         "--head-fraction must be in [0, 1]");
  }
}

TEST(DataFlagsTest, BadTruncationIsAUsageErrorEverywhere) {
  ExpectSameUsageError({"train", "eval", "tokenize", "bench-padding"}, "--truncation", "middle",
                       "--truncation: ");
  ExpectSameUsageError({"train", "eval", "tokenize", "bench-padding"}, "--pair-truncation",
                       "shortest", "--pair-truncation: ");
}

TEST(DataFlagsTest, ModelCommandsNeedRoomForTheSpecialTokens) {
  ExpectSameUsageError({"train", "eval", "bench-padding"}, "--max-len", "2",
                       "--max-len must be >= 3, got 2");
}

}  // namespace
}  // namespace padless::cli
