// Test helpers shared by the GPU tests of models/: whether a CUDA device is there, and the small
// encoder they run (4 layers, hidden 256: large enough for flash attention and bf16 rounding to
// matter, small enough to be quick).
#ifndef PADLESS_TESTS_MODELS_GPU_TEST_UTIL_H_
#define PADLESS_TESTS_MODELS_GPU_TEST_UTIL_H_

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include "padless/models/encoder_config.h"

namespace padless::models::testing {

inline bool HasCuda() {
  return at::globalContext().hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0;
}

// `dropout` is both the hidden and the attention dropout.
inline EncoderConfig GpuTestConfig(double dropout) {
  return EncoderConfig()
      .vocab_size(1000)
      .hidden(256)
      .layers(4)
      .heads(4)
      .ffn(1024)
      .max_positions(512)
      .dropout(dropout)
      .attention_dropout(dropout);
}

// ModernBERT's layout at a GPU-test size: 4 layers of 4 heads of 64, a 16-token window (+-8).
inline EncoderConfig GpuModernBertConfig() {
  return EncoderConfig::ModernBertBase()
      .vocab_size(1000)
      .hidden(256)
      .layers(4)
      .heads(4)
      .ffn(384)
      .max_positions(512)
      .num_labels(3)
      .local_attention(16);
}

}  // namespace padless::models::testing

#endif  // PADLESS_TESTS_MODELS_GPU_TEST_UTIL_H_
