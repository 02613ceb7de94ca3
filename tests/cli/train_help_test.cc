// `padless train --help` states the training defaults in prose; this ties that prose to
// models/training_defaults.h, so a changed default cannot leave the help text behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli_runner.h"
#include "padless/train/training_defaults.h"

namespace padless::cli::testing {
namespace {

using ::testing::HasSubstr;

// 5e-4 as the help writes it ("%.0e" gives "5e-04").
std::string ShortExponent(double value) {
  return absl::StrReplaceAll(absl::StrFormat("%.0e", value), {{"e-0", "e-"}, {"e+0", "e+"}});
}

TEST(TrainHelpTest, StatesTheDefaultsOfTrainingDefaults) {
  const CliResult r = RunPadless({"train", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const train::OptimizationDefaults& d : train::OptimizationDefaultsTable()) {
    const std::string lr = ShortExponent(d.lr);
    if (d.origin == train::kPretrainedOrigin) {
      EXPECT_THAT(r.out, HasSubstr(absl::StrCat(lr, " fine-tuning --init-from")));
    } else {
      EXPECT_THAT(r.out, HasSubstr(absl::StrCat(d.origin, " ", lr))) << d.origin;
    }
  }
  EXPECT_THAT(r.out,
              HasSubstr(absl::StrCat("--batch-size (", train::kDefaultSequencesPerBatch, ")")));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("at most ", train::kMaxDefaultTokensPerBatch)));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat(
                         "epochs: ", train::kMinDefaultEpochs, ", or more (at most ",
                         train::kMaxDefaultEpochs, ") when ", train::kMinDefaultEpochs,
                         " give fewer than ", train::kMinDefaultSteps, " optimizer steps")));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("after ", train::kChanceLevelCheckStep, " steps")));
}

}  // namespace
}  // namespace padless::cli::testing
