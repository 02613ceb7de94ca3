// DropoutResidualLayerNorm: the post-LN transformer sublayer epilogue
//   sum = residual + dropout(input + bias);  out = LayerNorm(sum) * gamma + beta
// in one pass over the rows, and its backward in one pass plus a small reduction. CUDA tensors
// with 16-byte aligned data and H a multiple of the 16-byte vector up to a register limit (bf16 /
// fp16: H % 8 == 0, H <= 4096; fp32: H % 4 == 0, H <= 2048) use the fused kernels; everything else
// (CPU tensors, other widths, misaligned views, builds without the kernels) the unfused ATen ops,
// which return the same structure.
//
// These functions are not differentiable themselves: they are the forward and backward bodies for
// an autograd function. Errors (shapes, dtypes, devices, p outside [0, 1)) throw c10::Error.
#ifndef PADLESS_CUDA_KERNELS_RESIDUAL_LAYER_NORM_H_
#define PADLESS_CUDA_KERNELS_RESIDUAL_LAYER_NORM_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "padless/cuda/kernels/fp8_quantize.h"
#include "padless/cuda/kernels/fp8_rowwise.h"

namespace padless::cuda {

struct DropoutResidualLayerNormResult {
  at::Tensor out;         // [T, H] LayerNorm(sum) * gamma + beta, in input's dtype
  at::Tensor sum;         // [T, H] residual + dropout(input + bias), input's dtype (for backward)
  at::Tensor mean, rstd;  // [T] fp32 statistics of `sum` (fp64 for fp64 rows)
  at::Tensor mask;        // [T, H] bool keep-mask; undefined when p == 0
};

// input, residual: [T, H] same dtype (bf16, fp16 or fp32), contiguous; bias: [H] in input's dtype
// or undefined; gamma, beta: [H], either input's dtype or fp32. Training-mode dropout with
// probability p in [0, 1) drawn from the default generator of input's device: elements are kept
// with probability 1 - p and scaled by 1 / (1 - p). On a GPU the mask is a function of the
// generator's state only: restoring the state and calling again reproduces it (not supported
// under CUDA graph capture). The statistics and `out` are computed in fp32 from `sum` as stored.
DropoutResidualLayerNormResult DropoutResidualLayerNorm(
    const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
    const at::Tensor& gamma, const at::Tensor& beta, double p, double eps);

// Inference: LayerNorm(residual + input + bias) * gamma + beta without dropout, returning only
// `out`: the kernel writes neither `sum` nor the statistics, which only a backward reads (one
// [T, H] write less per call). Same arguments, paths and errors as DropoutResidualLayerNorm.
at::Tensor ResidualLayerNorm(const at::Tensor& input, const at::Tensor& bias,
                             const at::Tensor& residual, const at::Tensor& gamma,
                             const at::Tensor& beta, double eps);

// ResidualLayerNorm whose output is also the next FP8 GEMM's input: `fp8` equals
// Fp8QuantizeRows(out, RowActivation::kNone, pad_rows_to) (fp8_rowwise.h) or, with
// fp8_scale_inv > 0 (finite), Fp8QuantizeAtScale(out, fp8_scale_inv, pad_rows_to) (fp8_static.h).
// On a GPU for bf16 / fp16 rows the LayerNorm kernel writes it from the row it holds in registers,
// saving the [T, H] read of a separate quantize pass; elsewhere the two functions run one after
// the other.
struct ResidualLayerNormFp8Result {
  at::Tensor out;  // [T, H] as ResidualLayerNorm returns it
  Fp8Rows fp8;     // its E4M3 copy with one scale per row, rows padded to pad_rows_to
};
ResidualLayerNormFp8Result ResidualLayerNormWithFp8(const at::Tensor& input, const at::Tensor& bias,
                                                    const at::Tensor& residual,
                                                    const at::Tensor& gamma, const at::Tensor& beta,
                                                    double eps, int64_t pad_rows_to = 16,
                                                    float fp8_scale_inv = 0.f);

struct DropoutResidualLayerNormGrads {
  at::Tensor d_sum;            // [T, H] gradient w.r.t. `sum` (= the residual's gradient)
  at::Tensor d_input;          // [T, H] d_sum * mask / (1 - p); may alias d_sum when p == 0
                               // (FP8 rows [T_pad, H] with Fp8GradOutput)
  at::Tensor d_gamma, d_beta;  // [H] fp32
  at::Tensor d_bias;           // [H] fp32 column sum of d_input; undefined unless need_bias_grad
};

// d_out [T, H]: gradient of `out`, in sum's dtype. `extra` (may be undefined): a [T, H] gradient
// that also flows into `out` (added to d_out before the LayerNorm backward), so that callers can
// fold a residual gradient in without a separate add. sum, mean, rstd, mask: as returned by the
// forward (mask is ignored when p == 0); gamma as given to it. d_sum and d_input are in sum's
// dtype; d_gamma, d_beta, d_bias are reduced deterministically (no float atomics). With `fp8`
// (fp8_quantize.h), d_input is written in FP8 instead, for the FP8 GEMM that takes it next (never
// aliasing d_sum then); d_bias is that of the 16-bit d_input as without it.
DropoutResidualLayerNormGrads DropoutResidualLayerNormBackward(
    const at::Tensor& d_out, const at::Tensor& extra, const at::Tensor& sum, const at::Tensor& mean,
    const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& mask, double p,
    bool need_bias_grad, const Fp8GradOutput* fp8 = nullptr);

// The same two functions built from the unfused ATen ops (native_dropout, native_layer_norm and
// their backwards) on any device: the fallback path, and the baseline of tests and benchmarks.
namespace reference {
DropoutResidualLayerNormResult DropoutResidualLayerNorm(
    const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
    const at::Tensor& gamma, const at::Tensor& beta, double p, double eps);
DropoutResidualLayerNormGrads DropoutResidualLayerNormBackward(
    const at::Tensor& d_out, const at::Tensor& extra, const at::Tensor& sum, const at::Tensor& mean,
    const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& mask, double p,
    bool need_bias_grad, const Fp8GradOutput* fp8 = nullptr);
}  // namespace reference

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_RESIDUAL_LAYER_NORM_H_
