// Two gradient passes of the encoder layer's backward that also produce a bias gradient, the
// column sums of the gradient they write, in the same pass (no second read of a [T, N] tensor):
//   GeluTanhBackwardWithBiasGrad   d_pre = dy * gelu_tanh'(pre)    (FFN-in: its bias gradient)
//   StackWithBiasGrad              d_qkv = [dq | dk | dv] per row    (QKV: its bias gradient)
// On a GPU with the kernels built, for bf16 / fp16 [T, N] tensors with N (each source's width for
// the stack) a multiple of 8 and 16-byte aligned data: one row kernel plus a small deterministic
// reduction (no atomics). Otherwise, and as reference::..., the unfused ATen ops:
// at::gelu_backward(dy, pre, "tanh") / at::cat, then at::sum over the rows.
//
// Measured on the H200 (bench/cuda/bias_grad_bench, bf16, T = 16384, 2026-12-01): the stack 57
// against 84 us unfused at H = 768, 78 against 101 us at H = 1024. A first GELU kernel (ATen's
// formula with tanhf) lost to at::gelu_backward + at::sum (134 against 127 us at F = 3072, 166
// against 159 us at F = 4096): it was bound by instruction issue, not memory. This one computes
// the slope with exp and a reciprocal (special-function instructions) in about a dozen fp32
// instructions an element; its H200 measurement is pending.
//
// The GELU gradient is computed in fp32 and rounded once: within one rounding of the exact
// gradient. at::gelu_backward's 1 + tanhf(u) cancels for pre < -3, so there the two may differ by
// a few roundings (ATen's being the less accurate).
//
// The bias gradient is in fp32 for bf16 / fp16 inputs (the parameters' dtype; summed in fp32 from
// the gradient as written, i.e. rounded, like at::sum(grad, 0, fp32)), else in the inputs' dtype.
// It is undefined unless asked for.
//
// Not differentiable (no autograd history); pieces of the fused layer's hand-written backward.
// Broken input (undefined, not 2-D, mismatched shapes / dtypes / devices, non-float) throws
// c10::Error naming the function.
#ifndef PADLESS_CUDA_KERNELS_BIAS_GRAD_H_
#define PADLESS_CUDA_KERNELS_BIAS_GRAD_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "padless/cuda/kernels/fp8_quantize.h"

namespace padless::cuda {

struct GradWithBiasGrad {
  at::Tensor grad;       // [T, N] in the inputs' dtype, contiguous (or FP8: Fp8GradOutput)
  at::Tensor bias_grad;  // [N], or undefined when not asked for
};

// With `fp8` (fp8_quantize.h's Fp8GradOutput) the gradient is written in FP8 instead; the bias
// gradient is that of the 16-bit gradient as without it.

// dy, pre: [T, N] of one floating dtype on one device.
GradWithBiasGrad GeluTanhBackwardWithBiasGrad(const at::Tensor& dy, const at::Tensor& pre,
                                              bool need_bias_grad,
                                              const Fp8GradOutput* fp8 = nullptr);

// dq, dk, dv: [T, H] each, one floating dtype and device; the result is [T, 3H]. Without fp8, when
// dq, dk, dv are the column thirds of one [T, 3H] buffer (as FA3 and cuDNN write them), the result
// is that buffer, not a copy.
GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                   bool need_bias_grad, const Fp8GradOutput* fp8 = nullptr);

namespace reference {
GradWithBiasGrad GeluTanhBackwardWithBiasGrad(const at::Tensor& dy, const at::Tensor& pre,
                                              bool need_bias_grad,
                                              const Fp8GradOutput* fp8 = nullptr);
GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                   bool need_bias_grad, const Fp8GradOutput* fp8 = nullptr);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last call above ran the
// kernel (false after the reference path).
bool LastBiasGradRanKernel();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_BIAS_GRAD_H_
