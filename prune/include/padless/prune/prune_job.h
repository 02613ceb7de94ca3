// PruneJob: everything `padless prune` does, as one library call. From a trained model directory,
// a labelled training file and a dev file, it removes attention heads and FFN neurons in `rounds`
// rounds, each one:
//   1. scores every head and neuron on the training data (at most `score_examples` of it, a
//      seeded sample; unit_importance.h) and writes
//      OUT/rounds/round-K-importance.{csv,svg};
//   2. removes the least important, so that after round k of K a share k/K of the final targets
//      is gone (prune_plan.h, structured_prune.h), into the model directory
//      OUT/rounds/round-K-pruned;
//   3. fine-tunes that model on the training data (TrainJob with init_from, the pretrained
//      defaults of learning rate and warmup) for `steps` optimizer steps (0: one epoch), into
//      OUT/rounds/round-K, or OUT itself for the last round;
//   4. measures dev accuracy before and after the fine-tune.
// OUT/prune_report.csv holds one row per round (round 0: the model as given): heads and FFN
// neurons left, parameters, dev accuracy pruned and fine-tuned. The final model directory is OUT.
//
// Errors: ValidatePruneJobOptions finds the problems of the options alone (InvalidArgument naming
// the flag as the CLI spells it); RunPruneJob returns those before touching a file, and otherwise
// errors of the data, the files or the run.
#ifndef PADLESS_PRUNE_PRUNE_JOB_H_
#define PADLESS_PRUNE_PRUNE_JOB_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/models/autocast.h"

namespace padless::prune {

struct PruneJobOptions {
  std::string model;   // a trained padless model directory (required)
  std::string data;    // labelled training file: importance scores and fine-tuning (required)
  std::string dev;     // labelled dev file (required)
  std::string out;     // the pruned model directory written (required; not `model`)
  double heads = 0.0;  // share of the original heads removed in the end, [0, 1)
  double ffn = 0.0;    // share of the original FFN neurons removed in the end, [0, 1)
  int64_t rounds = 1;
  int64_t steps = 0;  // fine-tuning optimizer steps per round; 0: one epoch
  // Training examples the importance pass reads (a seeded sample; 0: all). Michel et al. score on
  // a few thousand; the ranking of the lowest units settles long before a large corpus ends.
  int64_t score_examples = 4096;
  bool fine_tune = true;
  corpus::ReaderOptions reader;
  int64_t max_len = 512;   // tokens per sequence, special tokens included (at most the model's)
  int64_t max_tokens = 0;  // tokens per scoring / evaluation batch; 0: 16384 on a GPU, 4096 on CPU
  std::optional<c10::Device> device;            // empty: CUDA 0 when there is one, else the CPU
  models::AmpMode amp = models::AmpMode::kOff;  // fp8 scores and evaluates in bf16
  std::optional<double> lr;                     // fine-tuning peak rate; empty: pretrained default
  uint64_t seed = 1234;
  int threads = 0;  // tokenizer threads (0: the cores)
  bool quiet = false;
};

struct PruneRound {
  int64_t round = 0;  // 0: the model as given
  int64_t heads_left = 0;
  int64_t ffn_left = 0;
  int64_t parameters = 0;
  double dev_accuracy_pruned = 0.0;  // before the round's fine-tune (round 0: the model)
  std::optional<double> dev_accuracy_tuned;
  std::string dir;  // the round's model directory
};

struct PruneJobResult {
  std::vector<PruneRound> rounds;  // round 0 first
};

absl::Status ValidatePruneJobOptions(const PruneJobOptions& options);
absl::StatusOr<PruneJobResult> RunPruneJob(const PruneJobOptions& options);

// The report's CSV: a header and one row per round.
std::string PruneReportCsv(const PruneJobResult& result);

}  // namespace padless::prune

#endif  // PADLESS_PRUNE_PRUNE_JOB_H_
