// `padless train --memory-budget`: malformed sizes are usage errors (exit 2) naming the flag, and a
// budget below the model's fixed cost fails (exit 1) naming the minimum.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"

namespace padless::train {
namespace {

// `padless` runs as a child process (tests/cli/cli_runner.h).
using cli::testing::CliResult;
using cli::testing::RunPadless;
using cli::testing::ScratchDir;
using cli::testing::ReadFile;
using cli::testing::WriteFile;

std::string TinyData() {
  const std::string path = ScratchDir("memory_budget") + "/train.tsv";
  std::string tsv = "label\ttext\n";
  for (int i = 0; i < 40; ++i) {
    tsv += i % 2 ? "1\ta fine and lovely film with a good cast\n"
                 : "0\ta dull and tedious film with a weak plot\n";
  }
  WriteFile(path, tsv);
  return path;
}

TEST(MemoryBudgetCliTest, MalformedBudgetIsAUsageError) {
  const std::string data = TinyData();
  for (const std::string bad : {"lots", "40XB", "-1GiB", "0"}) {
    const CliResult r =
        RunPadless({"train", "--data", data, "--out", ScratchDir("memory_budget_bad") + "/model",
                    "--device", "cpu", "--memory-budget", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--memory-budget"), std::string::npos) << bad << ": " << r.err;
  }
}

TEST(MemoryBudgetCliTest, BudgetBelowTheFixedCostNamesTheMinimum) {
  const CliResult r = RunPadless({"train", "--data", TinyData(), "--out",
                                  ScratchDir("memory_budget_small") + "/model", "--preset", "tiny",
                                  "--vocab-size", "30", "--max-len", "64", "--device", "cpu",
                                  "--quiet", "--memory-budget", "100KiB"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("is too small: one row of 64 tokens needs at least"), std::string::npos)
      << r.err;
}

TEST(MemoryBudgetCliTest, TrainPrintsTheChosenBudget) {
  const std::string dir = ScratchDir("memory_budget_ok");
  const CliResult r = RunPadless({"train",
                                  "--data",
                                  TinyData(),
                                  "--out",
                                  dir + "/model",
                                  "--preset",
                                  "tiny",
                                  "--vocab-size",
                                  "30",
                                  "--max-len",
                                  "64",
                                  "--batching",
                                  "varlen",
                                  "--max-steps",
                                  "2",
                                  "--device",
                                  "cpu",
                                  "--quiet",
                                  "--memory-budget",
                                  "48MiB",
                                  "--metrics-json",
                                  dir + "/metrics.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("memory budget 48.0 MiB (target 45.6 MiB): max_tokens "), std::string::npos)
      << r.out;
  const std::string metrics = ReadFile(dir + "/metrics.json");
  EXPECT_NE(metrics.find("\"budget_bytes\": 50331648"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace padless::train
