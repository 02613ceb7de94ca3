// The encoder layer's GEMMs on cuBLASLt with a cached algorithm choice: Linear, LinearBias and the
// two backward GEMMs (declared below with their own notes), and the feed-forward block's FFN-in
// GEMM with its bias and GELU fused into the cuBLASLt epilogue (CUBLASLT_EPILOGUE_GELU_AUX_BIAS),
// the pre-activation kept as the aux output for the backward:
//   pre = x @ W1^T + b1, act = gelu_tanh(pre)                                LinearGelu
// One cuBLASLt matmul for bf16 / fp16 CUDA tensors that meet cuBLASLt's alignment rules (see "When
// the fused path runs" below); everything else runs the unfused ATen ops, which are also
// LinearGelu(..., GemmPath::kReference).
//
// Why no backward epilogues: measured on the H200 (bench/cuda/gemm_epilogue_bench, bf16,
// T = 16384, 2026-12-01), the fused forward wins (176.6 vs 203.9 us unfused addmm + gelu for
// H768/F3072, 278.7 vs 310.5 us for H1024/F4096), but
//  - DGELU_BGRAD (d_pre = (d_y @ W2) * gelu'(pre) with the bias gradient) lost: 479.1 vs 255.2 us
//    and 787.6 vs 377.9 us unfused, because cuBLASLt runs it as a separate slow epilogue kernel
//    (cublasLt::epilogue::impl::globalKernel, 260 us per call in a profile);
//  - BGRADB (weight gradient with the bias gradient) gained nothing (181.0 vs 168.4, 157.1 vs
//    157.5, 271.6 vs 252.0, 221.8 vs 227.1 us against mm + sum), and cuBLASLt 13 rejects its fp32
//    bias gradient (INVALID_VALUE), so every call paid a second heuristic query and an upcast.
// Callers run the backward from unfused ATen ops (mm, gelu_backward, sum).
//
// GELU: the fused path can only compute the tanh approximation (cuBLASLt's GELU epilogues are
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), so every path here uses it, the reference
// included (at::gelu(..., "tanh")). It differs from the exact erf GELU by at most 4.8e-4 (near
// x = 2.7); callers decide whether a model trained with erf GELU may use it.
//
// Not differentiable: outputs never carry autograd history (the function runs under
// at::NoGradGuard). It is a piece of a hand-written FFN forward / backward (an
// autograd::Function).
//
// Errors (undefined / non-2-D tensors, mismatched shapes, dtypes or devices, a failing cuBLASLt
// call) throw c10::Error naming the function and, for cuBLASLt, the cublasStatus_t name.
//
// When the fused path runs: the build has the CUDA kernels (CudaKernelsBuilt()), the tensors are
// bf16 or fp16 on one CUDA device, no dimension is 0, the feature dimensions (K, N) are multiples
// of 8 (cuBLASLt's GELU aux matrix needs a leading dimension divisible by 8; this also keeps every
// row 16-byte aligned) and every (contiguous) data pointer is 16-byte aligned, and cuBLASLt's
// heuristic offers an algorithm. Non-contiguous inputs are copied to contiguous ones first. T (the
// token count) may be anything >= 1.
//
// Host cost: the heuristic's choice is cached per problem with T rounded up to a multiple of 1024
// (src/gemm_algo_cache.cc), so a call in a bucket already seen sets up descriptors and launches.
//
// The code: fused_linear.cc (the 16-bit GEMMs) and scaled_mm.cc (the FP8 ones), on the private
// src/cublaslt_api.h (the cuBLASLt loader and descriptors), src/gemm_algo_cache.h (the algorithm
// cache and the workspace policy) and src/gemm_dispatch.h (the choice of path).
#ifndef PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_
#define PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_

#include <ATen/core/Tensor.h>

namespace padless::cuda {

// Which path a function below takes. kFused: the cuBLASLt path when it can run (see "When the
// fused path runs" above), else the unfused ops. kReference: always the unfused ATen ops (at::addmm
// and at::gelu(..., "tanh"); at::_scaled_mm for the FP8 GEMMs) on any device and dtype they
// support: the fallback, and the baseline for tests and benchmarks. Both check their arguments
// alike.
enum class GemmPath { kFused, kReference };

// pre = x @ weight^T + bias; act = gelu_tanh(pre). x [T, K], weight [N, K], bias [N]; all the same
// floating dtype on one device. act and pre are [T, N] contiguous, in that dtype.
// bf16/fp16 on CUDA: one cuBLASLt GEMM with epilogue CUBLASLT_EPILOGUE_GELU_AUX_BIAS (act is D,
// pre the aux output). Otherwise (fp32, CPU, no kernels): at::addmm then at::gelu(..., "tanh").
struct LinearGeluResult {
  at::Tensor act, pre;
};
LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            GemmPath path = GemmPath::kFused);

// act = gelu_tanh(x @ weight^T + bias) alone, for inference: the epilogue is
// CUBLASLT_EPILOGUE_GELU_BIAS, which writes no pre-activation (a backward's input), so the GEMM
// moves a [T, N] write less than LinearGelu. Same arguments, conditions and fallback as LinearGelu.
at::Tensor LinearBiasGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                          GemmPath path = GemmPath::kFused);

// y = x @ weight^T + bias with the bias added in the GEMM's epilogue (CUBLASLT_EPILOGUE_BIAS),
// under the same conditions and the same algorithm cache as LinearGelu; else at::addmm. Same math
// as at::addmm, but LibTorch's addmm asks cuBLASLt's heuristic on every call: in an H200 profile
// of a BERT-base step that was the most expensive host call of the forward.
at::Tensor LinearBias(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      GemmPath path = GemmPath::kFused);

// y = x @ weight^T (no bias) on the same cached cuBLASLt path (epilogue DEFAULT), under the same
// conditions; else at::mm. Same math as at::mm, for host time: in an H200 profile of the fused
// BERT-base step, each at::mm took 59 us of host time (profiled), and the fused layer's forward is
// bound by its host time.
at::Tensor Linear(const at::Tensor& x, const at::Tensor& weight, GemmPath path = GemmPath::kFused);

// The two backward GEMMs of y = x @ weight^T, on the same cached cuBLASLt path (epilogue DEFAULT)
// under the same conditions (bf16/fp16 CUDA, K and N multiples of 8, 16-byte aligned), else ATen:
//  - LinearInputGrad: dy [T, N] @ weight [N, K] -> [T, K] in dy's dtype. With `accumulate`
//    defined ([T, K], dy's dtype and device, contiguous for the fused path), adds the product into
//    it in place (beta = 1) and returns it: else at::addmm_.
//  - LinearWeightGrad: dy^T @ x for dy [T, N], x [T, K] -> [N, K], in fp32 for bf16/fp16 CUDA
//    inputs (the parameters' dtype, straight from the GEMM's fp32 accumulator; else at::mm with an
//    fp32 output), otherwise in the inputs' dtype. T is the reduced dimension here.
at::Tensor LinearInputGrad(const at::Tensor& dy, const at::Tensor& weight,
                           const at::Tensor& accumulate = at::Tensor(),
                           GemmPath path = GemmPath::kFused);
at::Tensor LinearWeightGrad(const at::Tensor& dy, const at::Tensor& x,
                            GemmPath path = GemmPath::kFused);

// FP8 GEMM with per-tensor scales, as at::_scaled_mm(a, b, scale_a, scale_b, bias, {}, out_dtype,
// fast_accum): out [M, N] = (a * scale_a) @ (b * scale_b) (+ bias) in out_dtype (fp32, bf16 or
// fp16). a [M, K] float8_e4m3fn or float8_e5m2, row-major; b [K, N] float8, column-major (b.t()
// contiguous), not both e5m2; scale_a, scale_b one fp32 value each on a's device; bias [N] in
// out_dtype (16-bit outputs only) or undefined. On the cached cuBLASLt path when M, N and K are
// multiples of 16 and everything is 16-byte aligned, else through at::_scaled_mm, which asks
// cuBLASLt's heuristic on every call: the FP8 training step spent 6.1 of its 29.2 ms with the GPU
// idle behind that host work (H200, 144 such GEMMs a step). `tokens` names the dimension that is
// the token count T, if any: the cache keys it rounded up to a multiple of 1024 as for the 16-bit
// GEMMs, else the exact shape. ScaledMm's GELU and accumulating variants below take M as the token
// count.
enum class TokenAxis { kNone, kM, kK };
at::Tensor ScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                    const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                    bool fast_accum, TokenAxis tokens = TokenAxis::kNone,
                    GemmPath path = GemmPath::kFused);

// accumulate += ScaledMm(a, b, scale_a, scale_b, {}, accumulate's dtype, fast_accum), in place
// (and returned): accumulate [M, N] fp32, bf16 or fp16, contiguous for the fused path. In the GEMM
// (beta = 1, as LinearInputGrad's accumulate), where M, the token count, may be any size (the
// algorithm cache buckets it as for the 16-bit GEMMs); else at::_scaled_mm and add_. For the FP8
// input gradient that joins a residual's gradient: no separate add pass.
at::Tensor ScaledMmAccumulate(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& accumulate,
                              bool fast_accum, GemmPath path = GemmPath::kFused);

// ScaledMm with the bias (required) and tanh GELU in the epilogue, as LinearGelu: pre = the scaled
// product + bias, act = gelu_tanh(pre), both [M, N] in out_dtype (bf16 or fp16); GELU_AUX_BIAS
// writes pre as its aux output. Else at::_scaled_mm, then at::gelu(pre, "tanh").
LinearGeluResult ScaledMmGelu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& bias,
                              at::ScalarType out_dtype, bool fast_accum,
                              GemmPath path = GemmPath::kFused);

// ScaledMm with the bias (required, bf16 or fp16) and the tanh GELU in the epilogue, written in
// E4M3 at a fixed scale: out [M, N] float8_e4m3fn = saturate(gelu_tanh(scaled product + bias) *
// scale_out), scale_out one fp32 value on a's device; a and b E4M3. One cuBLASLt GEMM (epilogue
// GELU_BIAS, D scale, C in the bias's type) on the cached path under ScaledMm's conditions.
// cuBLASLt has an FP8 output only with per-tensor scales (bench/serve/fp8_output_probe.cc), so the
// fixed scale replaces the per-token amax that no GEMM tile can see. Else at::_scaled_mm in the
// bias's dtype, at::gelu(..., "tanh") in fp32, then the scaled, saturating cast.
at::Tensor ScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             const at::Tensor& scale_out, bool fast_accum,
                             GemmPath path = GemmPath::kFused);

// ScaledMmGeluToFp8 for a training forward, whose backward needs the pre-activation and whose
// delayed scaling needs the activation's amax: act [M, N] float8_e4m3fn as ScaledMmGeluToFp8's
// output, pre [M, N] = the scaled product + bias in the bias's dtype (GELU_AUX_BIAS's aux output),
// and amax_out (one fp32 value on a's device) set to max |gelu_tanh(pre)| over all M rows, before
// scale_out (cuBLASLt's AMAX_D): overwritten, not folded into what it held. The GELU's only reader
// is then the next FP8 GEMM, so neither a 16-bit activation nor a cast pass over it is needed. One
// cuBLASLt GEMM on the cached path under ScaledMm's conditions; else ScaledMmGeluToFp8's reference
// keeping its sum as pre (the GELU then reads pre rounded to the bias's dtype, the GEMM's fp32
// sum: the two differ within that rounding).
LinearGeluResult ScaledMmGeluAuxToFp8(const at::Tensor& a, const at::Tensor& b,
                                      const at::Tensor& scale_a, const at::Tensor& scale_b,
                                      const at::Tensor& bias, const at::Tensor& scale_out,
                                      const at::Tensor& amax_out, bool fast_accum,
                                      GemmPath path = GemmPath::kFused);

// Diagnostics for tests and benchmarks: whether the calling thread's last call of any function
// above ran the cuBLASLt path (false after a reference / fallback run).
bool LastGemmEpilogueWasFused();

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_GEMM_EPILOGUE_H_
