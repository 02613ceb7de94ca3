// Evaluation: predictions, probabilities and metrics of a classifier on a tokenized corpus, and the
// check that a corpus fits a model (labels and token ids in range), which training shares.
#ifndef PADLESS_EVAL_EVALUATION_H_
#define PADLESS_EVAL_EVALUATION_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/eval/metrics.h"

namespace padless::eval {

struct EvalResult {
  ClassificationMetrics metrics;
  double loss = 0;
  std::vector<int64_t> predictions;               // per example of the corpus
  std::vector<std::vector<float>> probabilities;  // per example, softmax over labels
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
};

// Predictions and metrics of `model` on `data` (eval mode, no grad). Examples split into several
// windows (planner OverLong::kSplit) are classified by averaging their windows' probabilities.
absl::StatusOr<EvalResult> Evaluate(models::EncoderClassifier& model, const corpus::TokenizedCorpus& data,
                                    const batching::PlannerOptions& plan, const c10::Device& device,
                                    models::AmpMode amp, int64_t pad_id);

// The EvalResult of `scores` (ScoreCorpus on `data`, corpus_scores.h): predictions, metrics against
// `data`'s labels, the mean loss. Evaluate's second half; EvaluateSharded's too.
struct CorpusScores;
EvalResult EvalResultFromScores(const corpus::TokenizedCorpus& data, CorpusScores scores,
                                int64_t classes);

// OK when `corpus` has examples and every label and token id is in range for `config`;
// otherwise InvalidArgument, naming the corpus (`name`, e.g. "training data") and the first
// offending example or token.
absl::Status CheckCorpus(const corpus::TokenizedCorpus& corpus, const models::EncoderConfig& config,
                         const char* name);

}  // namespace padless::eval

#endif  // PADLESS_EVAL_EVALUATION_H_
