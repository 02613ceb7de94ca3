// How much a trained model needs each of its attention heads and FFN neurons: the importance
// score of Michel, Levy and Neubig, "Are Sixteen Heads Really Better than One?" (2019),
//   I(u) = E_batch | dL/dm_u |  at m = 1,
// where m_u is a mask that scales unit u's output and L the batch's mean cross-entropy. A pruning
// plan (prune_plan.h) removes the units with the lowest scores.
//
// No mask enters the model. A head's output and an FFN neuron's activation each feed one
// projection, y = W (m (.) a) + b, so the mask gradient is the weight gradient read against the
// weight: dL/dm_j = sum_i W[i, j] dL/dW[i, j], summed over the columns of the unit (head_dim
// columns of the attention output projection per head, one column of the FFN output projection
// per neuron). The scoring pass is therefore the training forward and backward as they are, on
// the same packed varlen batches, fused layers and precision as training; its gradients are
// identical to a masked model's (tests/prune/unit_importance_test.cc checks both against a model
// with explicit masks).
#ifndef PADLESS_PRUNE_UNIT_IMPORTANCE_H_
#define PADLESS_PRUNE_UNIT_IMPORTANCE_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::prune {

// Scores of the units a model has now (a pruned layer has fewer), per layer in weight order.
struct UnitImportance {
  std::vector<std::vector<double>> heads;  // [layer][head]
  std::vector<std::vector<double>> ffn;    // [layer][neuron]
  int64_t batches = 0;                     // batches averaged over
};

// |dL/dm| of every unit from the gradients the model's parameters hold now (after one backward
// of a batch's loss), as doubles on the host. Parameters without a gradient score 0.
UnitImportance MaskGradientMagnitudes(models::EncoderClassifier& model);

// One pass over `corpus` (labelled; batches planned by `plan`, padded with `pad_id`): forward and
// backward of each batch's mean loss under `amp` on `device`, in eval mode (no dropout), adding
// each batch's |dL/dm| and dividing by the batch count. The model's parameters are not changed;
// its gradients are cleared before and after, and its train/eval mode is restored.
absl::StatusOr<UnitImportance> ScoreUnitImportance(models::EncoderClassifier& model,
                                                   const corpus::TokenizedCorpus& corpus,
                                                   const batching::PlannerOptions& plan,
                                                   const c10::Device& device, models::AmpMode amp,
                                                   int64_t pad_id);

}  // namespace padless::prune

#endif  // PADLESS_PRUNE_UNIT_IMPORTANCE_H_
