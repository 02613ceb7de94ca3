// Launchers of the fused bias + dropout + residual + LayerNorm kernels behind
// residual_layer_norm.h. Raw pointers only (the .cu file must not include torch headers). Every
// launcher enqueues on `stream`, returns cudaGetLastError(), and assumes the caller validated
// shapes, dtypes and alignment with ResidualLayerNormSupported().
//
// Layout: one warp per row, the row held in registers. Lane l owns the 16-byte vectors
// l, l + 32, l + 64, ... of the row (8 bf16/fp16 or 4 fp32 elements each).
#ifndef PADLESS_CUDA_SRC_RESIDUAL_LAYER_NORM_KERNELS_H_
#define PADLESS_CUDA_SRC_RESIDUAL_LAYER_NORM_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp8_quantize_kernels.h"
#include "kernels.h"

namespace padless::cuda::internal {

// True when rows of `hidden` elements of `type` fit the kernels: hidden a multiple of the 16-byte
// vector width and small enough for the row to stay in registers (bf16/fp16: H <= 4096 and a
// multiple of 8; fp32: H <= 2048 and a multiple of 4). Pointer alignment (16 bytes for every
// tensor, the mask included) is the caller's to check.
bool ResidualLayerNormSupported(int64_t hidden, FloatType type);

// How many Philox randoms one thread draws in the forward kernel (a multiple of 4): the offset
// increment to reserve from the generator for one call.
int64_t ResidualLayerNormRandomsPerThread(int64_t hidden, FloatType type);

struct ResidualLayerNormForwardArgs {
  const void* input = nullptr;     // [rows, hidden] of `type`
  const void* bias = nullptr;      // [hidden] of `type`, or null
  const void* residual = nullptr;  // [rows, hidden] of `type`
  const float* gamma = nullptr;    // [hidden]
  const float* beta = nullptr;     // [hidden]
  void* out = nullptr;             // [rows, hidden] of `type`
  void* sum = nullptr;             // [rows, hidden] of `type`; null: not written (inference)
  bool* mask = nullptr;            // [rows, hidden]; null when p == 0
  float* mean = nullptr;           // [rows]; null (with rstd): not written (inference)
  float* rstd = nullptr;           // [rows]
  // Inference before an FP8 GEMM: `out` also as E4M3 with one scale per row, exactly what
  // Fp8QuantizeRows(out) writes ([padded_rows, hidden] bytes, [padded_rows] scale_inv; rows from
  // `rows` on zero at scale 1). Null: not written. bf16 / fp16 only.
  uint8_t* fp8 = nullptr;
  float* fp8_scale_inv = nullptr;
  // A fixed scale instead (fp8_fixed_scale_inv > 0): every row, padded ones too, gets scale_inv
  // fp8_fixed_scale_inv and its values are multiplied by fp8_fixed_scale (its reciprocal as the
  // host rounds it) and saturate, what Fp8QuantizeAtScale(out) writes (fp8_static.h).
  float fp8_fixed_scale = 0.f;
  float fp8_fixed_scale_inv = 0.f;
  int64_t padded_rows = 0;
  int64_t rows = 0;
  int64_t hidden = 0;
  FloatType type = FloatType::kFloat32;
  float p = 0.f;  // dropout probability, in [0, 1)
  float eps = 1e-5f;
  uint64_t seed = 0;  // Philox seed and offset (used only when p > 0)
  uint64_t offset = 0;
};

cudaError_t LaunchResidualLayerNormForward(const ResidualLayerNormForwardArgs& args,
                                           cudaStream_t stream);

// Number of row blocks of the backward kernel (rows of the fp32 partials workspace) on the current
// device, which has `sm_count` multiprocessors: as many as can be resident at once (the CUDA
// occupancy query), at most one per row group; >= 1.
int64_t ResidualLayerNormBackwardBlocks(int64_t rows, int64_t hidden, FloatType type,
                                        bool need_bias_grad, int64_t sm_count);

struct ResidualLayerNormBackwardArgs {
  const void* d_out = nullptr;   // [rows, hidden] of `type`
  const void* extra = nullptr;   // [rows, hidden] of `type`, or null
  const void* sum = nullptr;     // [rows, hidden] of `type`
  const float* mean = nullptr;   // [rows]
  const float* rstd = nullptr;   // [rows]
  const float* gamma = nullptr;  // [hidden]
  const bool* mask = nullptr;    // [rows, hidden]; null when p == 0
  void* d_sum = nullptr;         // [rows, hidden] of `type`
  void* d_input = nullptr;       // [rows, hidden] of `type`; null when p == 0 (it equals d_sum)
  // [blocks, quantities, hidden] fp32 scratch, blocks = ResidualLayerNormBackwardBlocks(...),
  // quantities = need_bias_grad ? 3 : 2.
  float* partials = nullptr;
  // [hidden] fp32 column sums; d_bias is used only when need_bias_grad.
  float* d_gamma = nullptr;
  float* d_beta = nullptr;
  float* d_bias = nullptr;
  int64_t rows = 0;
  int64_t hidden = 0;
  int64_t blocks = 0;
  FloatType type = FloatType::kFloat32;
  float p = 0.f;
  bool need_bias_grad = false;
  // fp8.scale set: d_input is written in FP8 instead, to fp8_d_input ([fp8.padded_rows, hidden]
  // bytes; d_input null), from its values rounded to `type`.
  Fp8RowsOutput fp8;
  uint8_t* fp8_d_input = nullptr;
};

// The row kernel, then the reduction of the per-block partials into d_gamma, d_beta and d_bias
// (deterministic: fixed summation order, no atomics).
cudaError_t LaunchResidualLayerNormBackward(const ResidualLayerNormBackwardArgs& args,
                                            cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_RESIDUAL_LAYER_NORM_KERNELS_H_
