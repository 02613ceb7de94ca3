// ScoreBatch: the engine's one forward of a device batch, run eagerly by the device worker and
// captured into CUDA graphs by GraphedForward: the model's logits under the engine's autocast,
// cast to fp32, and their softmax (a one-label head's sigmoid).
#ifndef PADLESS_SERVE_BATCH_SCORES_H_
#define PADLESS_SERVE_BATCH_SCORES_H_

#include <ATen/core/Tensor.h>

#include "padless/batching/batch.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::serve::internal {

// [n, C] fp32 on the batch's device, one row per sequence of the batch.
struct BatchScores {
  at::Tensor logits;
  at::Tensor probabilities;  // softmax over each row of logits; the sigmoid of a one-label head
};

// Runs under c10::InferenceMode itself. No host sync, so that it can be captured in a CUDA graph.
BatchScores ScoreBatch(models::EncoderClassifierImpl& model, const batching::Batch& batch,
                       c10::DeviceType device, models::AmpMode amp);

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_BATCH_SCORES_H_
