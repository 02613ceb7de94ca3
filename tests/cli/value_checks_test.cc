// Issue 13.3: the size flags (and --attention's names) get the same check, the same message and
// the same exit code (2) in every subcommand that reads them, and every error of every subcommand
// has one format, `padless <command>: error: <message>`, without status-code names such as
// NOT_FOUND. The paths need not exist: usage errors are reported before any path is looked at.
#include <algorithm>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::cli {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunPadless;
using ::testing::StartsWith;

// Each subcommand with the arguments it needs to get as far as its value checks.
struct Command {
  std::string name;  // as printed after "padless ": "tokenize stats"
  std::vector<std::string> args;
};

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"train", {"train", "--data", "x.tsv", "--out", "/nonexistent/out"}},
      {"eval", {"eval", "--model", "/nonexistent/m", "--data", "x.tsv"}},
      {"predict", {"predict", "--model", "/nonexistent/m", "--data", "x.tsv"}},
      {"tokenize encode", {"tokenize", "encode", "--model", "m.model", "--data", "x.tsv"}},
      {"tokenize stats", {"tokenize", "stats", "--model", "m.model", "--data", "x.tsv"}},
      {"bench-padding", {"bench-padding", "--model", "m.model", "--data", "x.tsv"}},
      {"prune",
       {"prune", "--model", "/nonexistent/m", "--data", "x.tsv", "--dev", "x.tsv", "--out",
        "/nonexistent/out"}},
  };
  return *commands;
}

struct ValueCase {
  std::vector<std::string> flags;     // appended to the command
  std::string message;                // the whole range message
  std::vector<std::string> commands;  // Command::name of the subcommands that read the flag
};

void ExpectUsageError(const Command& c, const ValueCase& v) {
  std::vector<std::string> args = c.args;
  args.insert(args.end(), v.flags.begin(), v.flags.end());
  const CliResult r = RunPadless(args);
  const std::string what = c.name + " " + v.flags[0] + " " + v.flags.back();
  EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
  EXPECT_THAT(r.err, StartsWith("padless " + c.name + ": error: " + v.message)) << what;
  const std::string top = c.name.substr(0, c.name.find(' '));
  EXPECT_THAT(r.err, HasSubstr("(see `padless " + top + " --help`)")) << what;
}

TEST(ValueChecksTest, SizeFlagsHaveTheSameBoundsAndMessageEverywhere) {
  const std::vector<std::string> all = {"train",          "eval",          "predict",
                                        "tokenize encode", "tokenize stats", "bench-padding",
                                        "prune"};
  const std::vector<ValueCase> cases = {
      {{"--max-len", "0"}, "--max-len must be >= 3, got 0", all},
      {{"--max-len", "-5"}, "--max-len must be >= 3, got -5", all},
      {{"--max-len", "2"}, "--max-len must be >= 3, got 2", all},
      {{"--max_len=1"}, "--max_len must be >= 3, got 1", all},  // named as written
      {{"--batch-size", "0"},
       "--batch-size must be >= 1, got 0",
       {"train", "eval", "bench-padding"}},
      {{"--max-len", "64", "--max-tokens", "10"},
       "--max-tokens must be >= --max-len (64), got 10",
       {"eval", "predict", "bench-padding", "prune"}},
      {{"--threads", "-1"},
       "--threads must be >= 0, got -1",
       {"train", "eval", "tokenize encode", "tokenize stats", "bench-padding", "prune"}},
  };
  for (const ValueCase& v : cases) {
    for (const Command& c : Commands()) {
      if (std::find(v.commands.begin(), v.commands.end(), c.name) != v.commands.end()) {
        ExpectUsageError(c, v);
      }
    }
  }
}

// --attention has the same names and the same message, listing them, in every command that reads
// it: train, and the three on the inference engine (embed and serve take their own arguments).
TEST(ValueChecksTest, AttentionNamesHaveTheSameMessageEverywhere) {
  const ValueCase bad_name = {{"--attention", "fa4"},
                              "--attention: unknown attention backend 'fa4' (expected auto, dense, "
                              "flash, efficient, reference, grouped, cudnn or fa3)",
                              {}};
  std::vector<Command> readers = {
      {"embed", {"embed", "--model", "/nonexistent/m", "--out", "/nonexistent/x.npy"}},
      {"serve", {"serve", "--model", "/nonexistent/m"}}};
  for (const Command& c : Commands()) {
    if (c.name == "train" || c.name == "predict") readers.push_back(c);
  }
  for (const Command& c : readers) ExpectUsageError(c, bad_name);
}

// Failures (exit 1) have the same prefix and show the message without the status code's name.
TEST(ValueChecksTest, FailuresHaveTheSameFormatWithoutStatusCodes) {
  for (const Command& c : Commands()) {
    const CliResult r = RunPadless(c.args);  // every path is missing
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, StartsWith("padless " + c.name + ": error: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr("does not exist")) << c.name;
    for (const char* code : {"NOT_FOUND", "INVALID_ARGUMENT", "INTERNAL", "FAILED_PRECONDITION"}) {
      EXPECT_THAT(r.err, Not(HasSubstr(code))) << c.name;
    }
  }
  const CliResult r = RunPadless({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, StartsWith("padless: error: unknown command 'frobnicate'"));
  const CliResult t = RunPadless({"tokenize", "fly"});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_THAT(t.err, StartsWith("padless tokenize: error: unknown action 'fly'"));
}

}  // namespace
}  // namespace padless::cli
