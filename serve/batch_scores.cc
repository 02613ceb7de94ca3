#include "batch_scores.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

namespace padless::serve::internal {

BatchScores ScoreBatch(models::EncoderClassifierImpl& model, const batching::Batch& batch,
                       c10::DeviceType device, models::AmpMode amp) {
  c10::InferenceMode inference;
  at::Tensor logits;
  {
    models::AutocastGuard autocast(device, amp);
    logits = model.forward(batch);
  }
  logits = logits.to(at::kFloat);
  // A one-label head (a cross-encoder's relevance score) has no distribution to normalize: its
  // probability is the sigmoid, as transformers' and TEI's single-label scores are.
  if (logits.size(1) == 1) return BatchScores{logits, at::sigmoid(logits)};
  return BatchScores{logits, at::softmax(logits, /*dim=*/1)};
}

}  // namespace padless::serve::internal
