// Internal: the fused encoder layer's GEMMs in FP8 (padless/models/fp8_scaling.h has the recipe).
// Each operand is quantized with its slot's delayed scale in one pass (cuda::Fp8Quantize, which
// also records the amax), and cuda::ScaledMm (at::_scaled_mm's product on the cached cuBLASLt
// path) multiplies with the inverse scales:
//   forward      y  = x @ w^T (+ bias)   x: E4M3 rows,          w: E4M3 rows
//   input grad   dx = dy @ w             dy: E5M2 rows,         w: E4M3 transposed
//   weight grad  dw = dy^T @ x (fp32)    dy: E5M2 transposed,   x: E4M3 transposed
// The gradient of the output is quantized once for both backward GEMMs. The FFN-out GEMM's input,
// the GELU output, comes already in E4M3 from the FFN-in GEMM's epilogue (Fp8LinearGeluToFp8, then
// Fp8LinearFromRows), and the input gradient that joins a residual's gradient is added in its GEMM.
// The transposes of the input and the weight come either from the forward's own quantizing pass
// (one cast-transpose pass instead of a cast pass forward and a transpose pass backward; kept for
// backward in one byte an element: Fp8Transposes) or, for a forward whose activations are not kept
// (checkpointing), from a second pass in backward over the compute-dtype copy. Either way with the
// scales of the forward (scales change only between steps), so both give the same bytes. The token
// dimension is padded to a multiple of 16 in the FP8 copies only (cuBLASLt's FP8 GEMMs want it;
// zero rows add nothing to a weight gradient); results are views of the real rows.
// Forward accumulates with cuBLASLt's fast accumulation, backward without (Transformer Engine's
// choice: gradients are summed over far more products).
#ifndef PADLESS_MODELS_FP8_GEMM_H_
#define PADLESS_MODELS_FP8_GEMM_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

#include "padless/cuda/kernels/fp8_quantize.h"
#include "padless/cuda/kernels/gemm_epilogue.h"
#include "padless/models/fp8_scaling.h"

namespace padless::models::internal {

// One GEMM's slots in a scaling state.
struct Fp8Gemm {
  Fp8Scaling* scaling;
  int64_t index;
};

// Whether a GEMM with weight [N, K] can run in FP8 (cuBLASLt needs N and K multiples of 16).
bool Fp8GemmFits(const at::Tensor& weight);

// The E4M3 transposes of a GEMM's forward operands, written by the forward's quantizing pass for
// the backward GEMMs: input [K, T_pad] (the weight gradient's operand), weight [K, N] (the input
// gradient's). An undefined one is quantized again in backward.
struct Fp8Transposes {
  at::Tensor input;
  at::Tensor weight;
};

// x [T, K] in the compute dtype, weight [N, K], bias [N] in x's dtype or undefined: [T, N].
// `keep` non-null: the same pass also writes both operands' transposes into it.
at::Tensor Fp8Linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     const Fp8Gemm& gemm, Fp8Transposes* keep = nullptr);

// Fp8Linear from an input already in E4M3 at the GEMM's input scale, its amax recorded: `rows`
// [T_pad, K] (T = `tokens`), the output in the weight's dtype. `keep`: the weight's transpose only
// (the input's is the caller's to make).
at::Tensor Fp8LinearFromRows(const at::Tensor& rows, int64_t tokens, const at::Tensor& weight,
                             const at::Tensor& bias, const Fp8Gemm& gemm, Fp8Transposes* keep);

// Fp8Linear with the tanh GELU in the GEMM's epilogue (cuda::ScaledMmGelu): pre = x @ w^T + bias
// and act = gelu_tanh(pre), both [T, N]; the bias is required.
cuda::LinearGeluResult Fp8LinearGelu(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, const Fp8Gemm& gemm,
                                     Fp8Transposes* keep = nullptr);

// Fp8LinearGelu whose activation feeds GEMM `next` alone (the FFN-in GEMM's into FFN-out): the
// epilogue writes it in E4M3 at next's input scale (cuda::ScaledMmGeluAuxToFp8) and its amax is
// folded into next's input slot, so no 16-bit activation is written and no cast pass reads it.
// rows: [T_pad, N] E4M3, next's input for Fp8LinearFromRows (its padding rows hold gelu(bias),
// which no real row's output or weight gradient reads: the gradient's padding rows are zero);
// pre: [T, N]. `next_keep`: where the rows' transpose goes (next's weight-gradient operand).
// Needs settled scales (not calibrating(): calibration reads the activation in hand). The bytes
// differ from quantizing Fp8LinearGelu's act within one E4M3 rounding: the epilogue rounds the
// fp32 GELU once.
struct Fp8GeluRows {
  at::Tensor rows;
  at::Tensor pre;
};
Fp8GeluRows Fp8LinearGeluToFp8(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, const Fp8Gemm& gemm, Fp8Transposes* keep,
                               const Fp8Gemm& next, Fp8Transposes* next_keep);

// The gradient of a GEMM's output [T, N], quantized for both backward GEMMs, with what the
// forward kept of its operands.
struct Fp8OutputGrad {
  at::Tensor rows;        // [T_pad, N] E5M2
  at::Tensor transposed;  // [N, T_pad] E5M2
  int64_t tokens = 0;
  at::ScalarType dtype = at::kBFloat16;  // the compute dtype it came in
  Fp8Gemm gemm;
  Fp8Transposes forward;
};
// `weight_grad` false: only the rows, for a frozen weight.
Fp8OutputGrad QuantizeOutputGrad(const at::Tensor& dy, const Fp8Gemm& gemm, bool weight_grad,
                                 const Fp8Transposes& forward);

// Where the kernel that computes a GEMM's output gradient writes it in FP8 itself (the gradient
// slot's scale and amax, E5M2, rows padded as above); nullopt while the scales calibrate (the
// calibration takes the amax of the tensor in hand first).
std::optional<cuda::Fp8GradOutput> OutputGradTarget(const Fp8Gemm& gemm);

// QuantizeOutputGrad's result from the rows such a kernel wrote ([T_pad, N]; T = `tokens`, their
// compute dtype `dtype`): only the transpose is left to do.
Fp8OutputGrad OutputGradFromRows(at::Tensor rows, int64_t tokens, at::ScalarType dtype,
                                 const Fp8Gemm& gemm, bool weight_grad,
                                 const Fp8Transposes& forward);

// dy @ weight [T, K] in the compute dtype; when `accumulate` is defined, added into it in place
// (and returned) by the GEMM itself (cuda::ScaledMmAccumulate, over the T real rows). `weight` is
// read only when dy.forward has no transpose of it.
at::Tensor Fp8LinearInputGrad(const Fp8OutputGrad& dy, const at::Tensor& weight,
                              const at::Tensor& accumulate);

// dy^T @ x [N, K] in fp32 (the parameters' dtype); x is the forward's input [T, K], read only when
// dy.forward has no transpose of it (then it may be undefined).
at::Tensor Fp8LinearWeightGrad(const Fp8OutputGrad& dy, const at::Tensor& x);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_FP8_GEMM_H_
