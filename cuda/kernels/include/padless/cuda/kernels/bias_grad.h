// The q/k/v gradient stack of the encoder layer's backward with the QKV bias gradient, the column
// sums of the stacked gradient, summed in the same pass (no second read of the [T, 3H] tensor):
//   StackWithBiasGrad   d_qkv = [dq | dk | dv] per row, and its column sums
// On a GPU with the kernels built, for bf16 / fp16 [T, H] inputs with H a multiple of 8 and
// 16-byte aligned data: one row kernel plus a small deterministic reduction (no atomics).
// Otherwise, and as reference::StackWithBiasGrad, the unfused ATen ops: at::cat, then at::sum
// over the rows.
//
// Measured on the H200 (bench/cuda/bias_grad_bench, bf16, T = 16384, 2026-12-01): 57 against 84 us
// unfused at H = 768, 78 against 101 us at H = 1024. The same design for the tanh-GELU backward
// with the FFN-in bias gradient lost to at::gelu_backward + at::sum (134 against 127 us at
// F = 3072, 166 against 159 us at F = 4096) and was dropped.
//
// The bias gradient is in fp32 for bf16 / fp16 inputs (the parameters' dtype; summed in fp32 from
// the gradient as written, i.e. rounded, like at::sum(grad, 0, fp32)), else in the inputs' dtype.
// It is undefined unless asked for.
//
// Not differentiable (no autograd history); a piece of the fused layer's hand-written backward.
// Broken input (undefined, not 2-D, mismatched shapes / dtypes / devices, non-float) throws
// c10::Error naming the function.
#ifndef PADLESS_CUDA_KERNELS_BIAS_GRAD_H_
#define PADLESS_CUDA_KERNELS_BIAS_GRAD_H_

#include <ATen/core/Tensor.h>

namespace padless::cuda {

struct GradWithBiasGrad {
  at::Tensor grad;       // [T, N] in the inputs' dtype, contiguous
  at::Tensor bias_grad;  // [N], or undefined when not asked for
};

// dq, dk, dv: [T, H] each, one floating dtype and device; the result is [T, 3H].
GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk,
                                   const at::Tensor& dv, bool need_bias_grad);

namespace reference {
GradWithBiasGrad StackWithBiasGrad(const at::Tensor& dq, const at::Tensor& dk,
                                   const at::Tensor& dv, bool need_bias_grad);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last StackWithBiasGrad ran
// the kernel (false after the reference path).
bool LastBiasGradRanKernel();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_BIAS_GRAD_H_
