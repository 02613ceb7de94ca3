// Internal: sliding-window attention (ModernBERT's local layers), on every backend of attention.h:
// a query attends to the keys of its own sequence within +-window positions of it. On CUDA the
// varlen flash kernel takes the window itself (window_size_left/right; its backward, through
// autograd, gets the same window); the CPU paths add a band to their masks.
#ifndef PADLESS_MODELS_WINDOWED_ATTENTION_H_
#define PADLESS_MODELS_WINDOWED_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "padless/models/attention.h"

namespace padless::models::internal {

// Attend (attention.h) with a window: same shapes and backends; `window` < 0 is global attention
// (Attend itself). kVarlenEfficient has no windowed kernel: an error (EncoderClassifier runs
// windowed models on kVarlenGrouped instead).
at::Tensor AttendWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionContext& ctx, int64_t window, double dropout_p);

// bool [length, length]: true where |query - key| <= window.
at::Tensor BandMask(int64_t length, int64_t window, const at::Device& device);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_WINDOWED_ATTENTION_H_
