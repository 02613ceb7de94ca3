// EvaluateSharded: Evaluate (evaluation.h) spread over the ranks of a data-parallel job. Rank r
// scores examples r, r + W, r + 2W, ... of the corpus; the probabilities and loss sums are summed
// over the ranks (each example is scored on exactly one rank), so that every rank returns the
// EvalResult that Evaluate gives on the whole corpus, and early stopping and best-weight decisions
// agree everywhere. A collective: every rank must call it.
// EvaluateOnRanks: EvaluateSharded in a data-parallel job, Evaluate in a single process.
#ifndef PADLESS_EVAL_SHARDED_EVALUATION_H_
#define PADLESS_EVAL_SHARDED_EVALUATION_H_

#include "absl/status/statusor.h"
#include "padless/distributed/process_group.h"
#include "padless/distributed/data_parallel.h"
#include "padless/eval/evaluation.h"

namespace padless::eval {

absl::StatusOr<EvalResult> EvaluateSharded(models::EncoderClassifier& model,
                                           const corpus::TokenizedCorpus& data,
                                           const batching::PlannerOptions& plan,
                                           const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                           distributed::ProcessGroup& group);

absl::StatusOr<EvalResult> EvaluateOnRanks(models::EncoderClassifier& model,
                                           const corpus::TokenizedCorpus& data,
                                           const batching::PlannerOptions& plan,
                                           const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                           const distributed::DataParallel& dp);

}  // namespace padless::eval

#endif  // PADLESS_EVAL_SHARDED_EVALUATION_H_
