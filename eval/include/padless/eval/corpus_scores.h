// Scoring a tokenized corpus: the class probabilities of every example and the summed loss, the
// one forward pass over a labelled corpus that evaluation (evaluation.h, sharded_evaluation.h)
// reads its metrics from.
#ifndef PADLESS_EVAL_CORPUS_SCORES_H_
#define PADLESS_EVAL_CORPUS_SCORES_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::eval {

// Class probabilities of every example of `corpus` (examples split into windows by the planner
// are averaged), plus the summed cross-entropy against the corpus labels. Does not change the
// model's train/eval mode; runs without autograd. Batches are padded with `pad_id` (the
// tokenizer's special_ids().pad). Thread-safe for a model in eval mode.
struct CorpusScores {
  std::vector<std::vector<float>> probabilities;
  double loss_sum = 0;
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
};
absl::StatusOr<CorpusScores> ScoreCorpus(models::EncoderClassifier& model,
                                         const corpus::TokenizedCorpus& corpus,
                                         const batching::PlannerOptions& plan,
                                         const c10::Device& device, models::AmpMode amp, int64_t pad_id,
                                         int workers = 1);

}  // namespace padless::eval

#endif  // PADLESS_EVAL_CORPUS_SCORES_H_
