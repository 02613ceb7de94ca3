// Checking EngineOptions against a model, once, at Load/Create: every limit positive, max_len
// clamped to what the model's positions allow, one sequence always fitting a batch, an attention
// backend the device and build can run.
#ifndef PADLESS_SERVE_ENGINE_OPTIONS_H_
#define PADLESS_SERVE_ENGINE_OPTIONS_H_

#include <c10/core/ScalarType.h>

#include "absl/status/status.h"
#include "padless/models/encoder_config.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve::internal {

// InvalidArgument naming the first bad field; else `options` as the engine runs them (max_len
// clamped, tokenizer_threads resolved).
absl::Status ResolveEngineOptions(const models::EncoderConfig& config, EngineOptions* options);

// The dtype the model computes in under `amp`: fp32, or the autocast dtype.
c10::ScalarType ComputeDtype(models::AmpMode amp);

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_ENGINE_OPTIONS_H_
