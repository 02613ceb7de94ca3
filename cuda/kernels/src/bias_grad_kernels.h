// Launchers of the gradient passes with fused bias-gradient column sums behind bias_grad.h. Raw
// pointers only (the .cu file must not include torch headers). Every launcher enqueues on
// `stream`, returns cudaGetLastError(), and assumes the caller checked what BiasGradSupported()
// and the 16-byte alignment of every pointer require.
//
// Layout: a thread owns one 16-byte vector (8 bf16 / fp16 elements) of columns and a strip of
// kBiasGradRowsPerBlock rows, which it loads a few rows ahead of its work; it writes its outputs
// and sums them (as rounded to the storage type, like a sum over the written gradient) in fp32
// registers, then one row of fp32 partials per row block. A second kernel sums the partials of
// each column in a fixed order: deterministic, no atomics.
#ifndef PADLESS_CUDA_SRC_BIAS_GRAD_KERNELS_H_
#define PADLESS_CUDA_SRC_BIAS_GRAD_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp8_quantize_kernels.h"
#include "kernels.h"

namespace padless::cuda::internal {

// bf16 / fp16 only, and the column count (each source's width for the stack) a multiple of 8.
bool BiasGradSupported(int64_t cols, FloatType type);

// Rows of the fp32 partials workspace ([blocks, cols]) for `rows` rows; >= 1.
int64_t BiasGradBlocks(int64_t rows);

struct BiasGradOutput {
  void* out = nullptr;         // [rows, cols] of `type`, or [fp8.padded_rows, cols] FP8 bytes
  float* partials = nullptr;   // [BiasGradBlocks(rows), cols]; null: no column sums
  float* bias_grad = nullptr;  // [cols]; null when partials is
  int64_t rows = 0;
  int64_t cols = 0;
  FloatType type = FloatType::kBFloat16;
  Fp8RowsOutput fp8;  // scale null: the output is in `type`
};

// out = grad * gelu_tanh'(pre) (grad, pre: [rows, cols] of `type`), computed in fp32 like
// at::gelu_backward(..., "tanh") but with exp and a reciprocal in place of tanhf (see the .cu).
cudaError_t LaunchGeluTanhBackward(const void* grad, const void* pre, const BiasGradOutput& out,
                                   cudaStream_t stream);

// out[r] = [a[r] | b[r] | c[r]] for three [rows, cols / 3] inputs of `type` (cols / 3 a multiple
// of 8).
cudaError_t LaunchStack3(const void* a, const void* b, const void* c, const BiasGradOutput& out,
                         cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_BIAS_GRAD_KERNELS_H_
