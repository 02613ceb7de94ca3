// The encoder feed-forward block's GEMMs with their elementwise neighbours fused into the GEMM
// epilogue (cuBLASLt), forward and backward:
//   forward   pre = x @ W1^T + b1, act = gelu_tanh(pre)                      LinearGelu
//   backward  d_pre = (d_y @ W2) * gelu_tanh'(pre), d_b1 = sum_rows(d_pre)    MatmulGeluBackward
//             d_W = grad^T @ input, d_b = sum_rows(grad) (both FFN linears)   LinearWeightGrad
// where y = act @ W2^T + b2 is the FFN output and d_y its gradient.
// Each is one cuBLASLt matmul for bf16 / fp16 CUDA tensors that meet cuBLASLt's alignment rules
// (see "When the fused path runs" below); everything else runs the unfused ATen ops, which are
// also the `reference::` functions.
//
// GELU: the fused path can only compute the tanh approximation (cuBLASLt's GELU epilogues are
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), so every path here uses it, the reference
// included (at::gelu(..., "tanh")). It differs from the exact erf GELU by at most 4.8e-4 (near
// x = 2.7); callers decide whether a model trained with erf GELU may use it.
//
// Not differentiable: outputs never carry autograd history (the functions run under
// at::NoGradGuard). They are the pieces of a hand-written FFN backward (an autograd::Function).
//
// Errors (undefined / non-2-D tensors, mismatched shapes, dtypes or devices, a failing cuBLASLt
// call) throw c10::Error naming the function and, for cuBLASLt, the cublasStatus_t name.
//
// When the fused path runs: the build has the CUDA kernels (CudaKernelsBuilt()), the tensors are
// bf16 or fp16 on one CUDA device, no dimension is 0, the feature dimensions (K, N, F) are
// multiples of 8 (cuBLASLt's GELU aux matrix needs a leading dimension divisible by 8; this also
// keeps every row 16-byte aligned) and every (contiguous) data pointer is 16-byte aligned, and
// cuBLASLt's heuristic offers an algorithm. Non-contiguous inputs are copied to contiguous ones
// first. T (the token count) may be anything >= 1.
#ifndef PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_
#define PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_

#include <ATen/core/Tensor.h>

namespace padless::cuda {

// pre = x @ weight^T + bias; act = gelu_tanh(pre). x [T, K], weight [N, K], bias [N]; all the same
// floating dtype on one device. act and pre are [T, N] contiguous, in that dtype.
// bf16/fp16 on CUDA: one cuBLASLt GEMM with epilogue CUBLASLT_EPILOGUE_GELU_AUX_BIAS (act is D,
// pre the aux output). Otherwise (fp32, CPU, no kernels): at::addmm then at::gelu(..., "tanh").
struct LinearGeluResult {
  at::Tensor act, pre;
};
LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// The FFN-in backward through the activation: d_pre = (grad @ weight) * gelu_tanh'(pre),
// d_bias = column sum of d_pre over the T rows. grad [T, N], weight [N, F], pre [T, F], one dtype.
// d_pre is [T, F] in that dtype; d_bias is [F] in fp32 (fp64 for fp64 inputs).
// bf16/fp16 on CUDA: one GEMM with CUBLASLT_EPILOGUE_DGELU_BGRAD. cuBLASLt is first asked for an
// fp32 bias gradient (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = CUDA_R_32F); when it offers no
// algorithm for that, the bias gradient is produced in the D dtype (bf16/fp16, the documented
// default) and upcast, i.e. rounded once to 16 bits. The reference path sums in fp32.
struct GeluBackwardResult {
  at::Tensor d_pre, d_bias;
};
GeluBackwardResult MatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                                      const at::Tensor& pre);

// Weight gradient of y = x @ weight^T + b: d_weight = grad^T @ x ([N, K], the inputs' dtype), and
// when need_bias the bias gradient d_bias = column sum of grad over the T rows ([N], fp32 with the
// same fp32-or-rounded rule as MatmulGeluBackward) from the same GEMM (CUBLASLT_EPILOGUE_BGRADB:
// see gemm_epilogue.cc for the column-major view). grad [T, N], x [T, K]. Without need_bias,
// d_bias is an undefined tensor.
struct WeightGradResult {
  at::Tensor d_weight, d_bias;
};
WeightGradResult LinearWeightGrad(const at::Tensor& grad, const at::Tensor& x, bool need_bias);

// The same three operations from unfused ATen ops on any device and dtype (at::addmm + at::gelu;
// at::mm + at::gelu_backward + at::sum; at::mm + at::sum): the fallback, and the baseline for tests
// and benchmarks.
namespace reference {
LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
GeluBackwardResult MatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                                      const at::Tensor& pre);
WeightGradResult LinearWeightGrad(const at::Tensor& grad, const at::Tensor& x, bool need_bias);
}  // namespace reference

// Diagnostics for tests and benchmarks: whether the calling thread's last call of one of the three
// functions above ran the fused cuBLASLt path (false after a reference / fallback run).
bool LastGemmEpilogueWasFused();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_
