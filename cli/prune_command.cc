// `padless prune --model DIR --data FILE --dev FILE --out DIR2 --heads 0.5 --ffn 0.3`: removes the
// least important attention heads and FFN neurons of a trained model in --rounds rounds, each
// followed by a short fine-tune, and writes the smaller model directory. The work is
// prune::RunPruneJob (prune_job.h); this file maps flags onto it and prints the round table.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "padless/prune/prune_job.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(double, heads, 0.0, "prune: share of the model's attention heads removed, in [0, 1)");
ABSL_FLAG(double, ffn, 0.0, "prune: share of the model's FFN neurons removed, in [0, 1)");
ABSL_FLAG(int64_t, rounds, 1,
          "prune: rounds of score, remove and fine-tune; round k of K removes k/K of the shares");
ABSL_FLAG(int64_t, steps, 0, "prune: fine-tuning optimizer steps per round (0: one epoch)");
ABSL_FLAG(int64_t, score_examples, 4096,
          "prune: training examples the importance scores read, a seeded sample (0: all)");
ABSL_FLAG(bool, fine_tune, true, "prune: fine-tune after each round (false: prune only)");

namespace padless::cli {
namespace {

constexpr const char* kPruneCmd = "prune";

absl::StatusOr<prune::PruneJobOptions> PruneOptionsFromFlags() {
  prune::PruneJobOptions o;
  o.model = absl::GetFlag(FLAGS_model);
  o.data = absl::GetFlag(FLAGS_data);
  o.dev = absl::GetFlag(FLAGS_dev);
  o.out = absl::GetFlag(FLAGS_out);
  o.heads = absl::GetFlag(FLAGS_heads);
  o.ffn = absl::GetFlag(FLAGS_ffn);
  o.rounds = absl::GetFlag(FLAGS_rounds);
  o.steps = absl::GetFlag(FLAGS_steps);
  o.fine_tune = absl::GetFlag(FLAGS_fine_tune);
  o.score_examples = absl::GetFlag(FLAGS_score_examples);
  o.max_len = absl::GetFlag(FLAGS_max_len);
  o.max_tokens = absl::GetFlag(FLAGS_max_tokens).value_or(0);
  o.lr = absl::GetFlag(FLAGS_lr);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.quiet = absl::GetFlag(FLAGS_quiet);
  if (absl::Status s = CheckSizeFlags(kMaxLen | kMaxTokens | kThreads); !s.ok()) return s;
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
  if (!reader.ok()) return reader.status();
  o.reader = *reader;
  absl::StatusOr<c10::Device> device = DeviceFlag();
  if (!device.ok()) return device.status();
  o.device = *device;
  absl::StatusOr<models::AmpMode> amp = AmpFlag();
  if (!amp.ok()) return amp.status();
  o.amp = *amp;
  if (absl::Status s = prune::ValidatePruneJobOptions(o); !s.ok()) {
    return UsageError(s.message());
  }
  return o;
}

int RunPrune(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(kPruneCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  absl::StatusOr<prune::PruneJobOptions> o = PruneOptionsFromFlags();
  if (!o.ok()) return ReportError(kPruneCmd, o.status());
  if (absl::Status s =
          CheckPathFlags({{"model", o->model, PathUse::kInputDirectory, {"config.json"}},
                          {"data", o->data, PathUse::kInputTextFile},
                          {"dev", o->dev, PathUse::kInputTextFile},
                          {"out", o->out, PathUse::kOutputDirectory}});
      !s.ok()) {
    return Fail(kPruneCmd, s);
  }
  absl::StatusOr<prune::PruneJobResult> result = prune::RunPruneJob(*o);
  if (!result.ok()) return Fail(kPruneCmd, result.status());
  absl::PrintF("%s", prune::PruneReportCsv(*result));
  return kExitOk;
}

}  // namespace

const Subcommand kPruneCommand = {
    "prune",
    "remove the least important attention heads and FFN neurons of a trained model",
    "usage: padless prune --model DIR --data FILE --dev FILE --out DIR2 [--heads 0.5] [--ffn 0.3]\n"
    "                     [--rounds K] [--steps N] [--fine-tune=false]\n\n"
    "Scores every head and FFN neuron on --data (the expected |gradient| of a mask on it,\n"
    "Michel et al. 2019), removes the lowest-scored across layers (each layer keeps a head; FFN\n"
    "widths stay multiples of 16), and fine-tunes on --data; K rounds reach the shares in steps.\n"
    "Writes DIR2 (the final model), DIR2/prune_report.csv (heads, FFN neurons, parameters and dev\n"
    "accuracy per round) and DIR2/rounds/ (each round's model and its importance CSV and SVG).\n"
    "Prints the report on stdout.",
    {"model",       "data",         "dev",
     "out",         "heads",        "ffn",
     "rounds",      "steps",        "score_examples",
     "fine_tune",   "max_len",      "max_tokens",
     "lr",          "amp",          "device",
     "threads",     "seed",         "quiet",
     "format",      "text_field",   "text_pair_field",
     "label_field", "skip_bad_rows"},
    RunPrune};

}  // namespace padless::cli
