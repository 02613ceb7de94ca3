// The FP8 GEMMs of gemm_epilogue.h (ScaledMm, ScaledMmAccumulate, ScaledMmGelu, ScaledMmGeluToFp8,
// ScaledMmGeluAuxToFp8): their argument checks, their cuBLASLt GEMMs and their at::_scaled_mm
// paths.
#include "padless/cuda/kernels/gemm_epilogue.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "src/fp8_reference.h"
#include "src/gemm_dispatch.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <cublasLt.h>

#include "src/cublaslt_api.h"
#include "src/gemm_algo_cache.h"
#endif

namespace padless::cuda {
namespace {

using internal::Is16BitFloat;
using internal::IsFp8;
using internal::RunGemmPath;

#ifdef PADLESS_HAVE_CUDA_KERNELS
using internal::CudaType;
using internal::GemmSpec;
using internal::RunGemm;
using internal::TokenDim;
using internal::U64;

cudaDataType_t Fp8CudaType(at::ScalarType t) {
  return t == at::kFloat8_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

cudaDataType_t OutCudaType(at::ScalarType t) { return t == at::kFloat ? CUDA_R_32F : CudaType(t); }

// out[M, N] = (a * scale_a) @ (b * scale_b) (+ bias): column-major out^T [N, M] = b-as-stored
// (column-major [K, N], transposed: the "TN" layout FP8 GEMMs require) @ a-as-stored (column-major
// [K, M]). cuBLASLt's A is b, so its A scale is scale_b. `tokens` says which of M and K is the
// token count, which the algorithm cache buckets (kNone: it keys the exact shape). M must be a
// multiple of 16 unless `any_m` (cuBLASLt's FP8 GEMMs need K and N multiples of 16, not M).
// `out` [M, N] is allocated by the caller (16-bit, fp32 or E4M3). Empty when the fused path
// cannot run these operands.
std::optional<GemmSpec> ScaledMmSpec(const at::Tensor& a, const at::Tensor& b,
                                     const at::Tensor& scale_a, const at::Tensor& scale_b,
                                     const at::Tensor& bias, bool fast_accum, const at::Tensor& out,
                                     TokenAxis tokens, bool any_m = false) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || (!any_m && m % 16 != 0) || k % 16 != 0 || n % 16 != 0) return std::nullopt;
  if (a.scalar_type() == at::kFloat8_e5m2 && b.scalar_type() == at::kFloat8_e5m2) {
    return std::nullopt;
  }
  if (!a.is_contiguous() || !b.t().is_contiguous()) return std::nullopt;
  const bool fp8_out = IsFp8(out.scalar_type());
  const at::ScalarType bias_dtype = fp8_out ? bias.scalar_type() : out.scalar_type();
  if (bias.defined() &&
      (!Is16BitFloat(bias_dtype) || bias.scalar_type() != bias_dtype || !bias.is_contiguous())) {
    return std::nullopt;
  }
  if (!internal::Aligned16({&a, &b, &out, &bias, &scale_a, &scale_b})) return std::nullopt;
  GemmSpec g;
  g.op = "ScaledMm";
  g.trans_a = CUBLAS_OP_T;
  g.a = {b.data_ptr(), U64(k), U64(n)};
  g.b = {a.data_ptr(), U64(k), U64(m)};
  g.d = out.data_ptr();
  g.d_rows = U64(n);
  g.d_cols = U64(m);
  g.dtype = Fp8CudaType(b.scalar_type());
  g.b_dtype = Fp8CudaType(a.scalar_type());
  g.d_dtype = fp8_out ? Fp8CudaType(out.scalar_type()) : OutCudaType(out.scalar_type());
  if (fp8_out) g.c_dtype = CudaType(bias_dtype);
  // cuBLASLt's D is out^T: its columns (n) are our M.
  g.token_dim = tokens == TokenAxis::kM   ? TokenDim::kN
                : tokens == TokenAxis::kK ? TokenDim::kK
                                          : TokenDim::kNone;
  g.epilogue = bias.defined() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  g.bias = bias.defined() ? bias.data_ptr() : nullptr;
  g.a_scale = scale_b.data_ptr();
  g.b_scale = scale_a.data_ptr();
  g.fast_accum = fast_accum;
  return g;
}

// accumulate[M, N] += (a * scale_a) @ (b * scale_b): ScaledMmSpec with beta = 1, C aliasing D.
bool FusedScaledMmAccumulate(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& accumulate,
                             bool fast_accum) {
  if (!accumulate.is_contiguous()) return false;
  std::optional<GemmSpec> g =
      ScaledMmSpec(a, b, scale_a, scale_b, at::Tensor(), fast_accum, accumulate, TokenAxis::kM,
                   /*any_m=*/true);
  if (!g) return false;
  g->op = "ScaledMmAccumulate";
  g->accumulate = true;
  return RunGemm(*g);
}

// With `pre` (a bias required), the epilogue is GELU_AUX_BIAS as in LinearGelu: `out` gets
// gelu_tanh of the product plus bias, `pre` the product plus bias.
bool FusedScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                   const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                   bool fast_accum, TokenAxis tokens, at::Tensor& out, at::Tensor* pre = nullptr) {
  out = at::empty({a.size(0), b.size(1)}, a.options().dtype(out_dtype));
  std::optional<GemmSpec> g = ScaledMmSpec(a, b, scale_a, scale_b, bias, fast_accum, out, tokens);
  if (!g) return false;
  if (pre != nullptr) {
    *pre = at::empty_like(out);
    g->epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    g->aux = pre->data_ptr();
  }
  return RunGemm(*g);
}

// The GELU epilogue into an E4M3 `out`, multiplied by scale_out after the GELU. With `pre`,
// GELU_AUX_BIAS also writes the product plus bias there in the bias's dtype (else GELU_BIAS); with
// `amax_out` defined, cuBLASLt sets it to max |gelu| (AMAX_D).
bool FusedScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, const at::Tensor& bias,
                            const at::Tensor& scale_out, bool fast_accum, at::Tensor& out,
                            at::Tensor* pre = nullptr, const at::Tensor& amax_out = at::Tensor()) {
  out = at::empty({a.size(0), b.size(1)}, a.options().dtype(at::kFloat8_e4m3fn));
  std::optional<GemmSpec> g =
      ScaledMmSpec(a, b, scale_a, scale_b, bias, fast_accum, out, TokenAxis::kM);
  if (!g || !internal::Aligned16({&scale_out, &amax_out})) return false;
  g->op = pre != nullptr ? "ScaledMmGeluAuxToFp8" : "ScaledMmGeluToFp8";
  g->epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  g->d_scale = scale_out.data_ptr();
  if (pre != nullptr) {
    *pre = at::empty(out.sizes(), bias.options());
    g->epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    g->aux = pre->data_ptr();
  }
  if (amax_out.defined()) g->amax_d = amax_out.data_ptr();
  return RunGemm(*g);
}

#else
// Without the CUDA kernels there is no fused path.
template <typename... Args>
bool FusedScaledMm(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedScaledMmGeluToFp8(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedScaledMmAccumulate(Args&&...) {
  return false;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

// --- Argument checks (shared by both paths) and the at::_scaled_mm paths.

void CheckScaledMmArgs(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                       const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                       const char* kOp) {
  for (const auto& [t, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
    TORCH_CHECK(t->defined() && t->dim() == 2, kOp, ": ", name, " must be a 2-D tensor");
    TORCH_CHECK(IsFp8(t->scalar_type()), kOp, ": ", name,
                " must be float8_e4m3fn or float8_e5m2, got ", t->scalar_type());
  }
  TORCH_CHECK(a.size(1) == b.size(0), kOp, ": a is ", a.sizes(), " and b is ", b.sizes(),
              "; need a [M, K] and b [K, N]");
  for (const auto& [t, name] : {std::pair{&scale_a, "scale_a"}, std::pair{&scale_b, "scale_b"}}) {
    TORCH_CHECK(t->defined() && t->numel() == 1 && t->scalar_type() == at::kFloat, kOp, ": ", name,
                " must be one fp32 value");
    TORCH_CHECK(t->device() == a.device(), kOp, ": ", name, " is on ", t->device(), " but a is on ",
                a.device());
  }
  TORCH_CHECK(b.device() == a.device(), kOp, ": b is on ", b.device(), " but a is on ", a.device());
  TORCH_CHECK(out_dtype == at::kFloat || Is16BitFloat(out_dtype), kOp,
              ": the output must be fp32, bf16 or fp16, not ", out_dtype);
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == b.size(1)), kOp,
              ": bias must be [", b.size(1), "]");
}

// ScaledMmGeluToFp8's checks, shared with ScaledMmGeluAuxToFp8 (named `op`).
void CheckScaledMmGeluToFp8Args(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                                const at::Tensor& scale_b, const at::Tensor& bias,
                                const at::Tensor& scale_out, const char* op) {
  TORCH_CHECK(bias.defined(), op, ": needs a bias");
  CheckScaledMmArgs(a, b, scale_a, scale_b, bias, bias.scalar_type(), op);
  TORCH_CHECK(Is16BitFloat(bias.scalar_type()), op, ": the bias must be bf16 or fp16, not ",
              bias.scalar_type());
  TORCH_CHECK(a.scalar_type() == at::kFloat8_e4m3fn && b.scalar_type() == at::kFloat8_e4m3fn, op,
              ": a and b must be float8_e4m3fn");
  TORCH_CHECK(scale_out.defined() && scale_out.numel() == 1 &&
                  scale_out.scalar_type() == at::kFloat && scale_out.device() == a.device(),
              op, ": scale_out must be one fp32 value on a's device");
}

at::Tensor ReferenceScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             at::ScalarType out_dtype, bool fast_accum) {
  return at::_scaled_mm(a, b, scale_a, scale_b,
                        bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                        std::nullopt, out_dtype, fast_accum);
}

// ScaledMmGeluToFp8's reference: the product plus bias in the bias's dtype, the GELU in fp32, then
// the scaled, saturating cast (as cuBLASLt's conversion saturates). `pre` and `amax_out` as in
// FusedScaledMmGeluToFp8.
at::Tensor ReferenceScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b,
                                      const at::Tensor& scale_a, const at::Tensor& scale_b,
                                      const at::Tensor& bias, const at::Tensor& scale_out,
                                      bool fast_accum, at::Tensor* pre = nullptr,
                                      const at::Tensor& amax_out = at::Tensor()) {
  at::Tensor sum = ReferenceScaledMm(a, b, scale_a, scale_b, bias, bias.scalar_type(), fast_accum);
  const at::Tensor act = at::gelu(sum.to(at::kFloat), "tanh");
  if (amax_out.defined()) amax_out.copy_(act.abs().amax().view(amax_out.sizes()));
  if (pre != nullptr) *pre = std::move(sum);
  return internal::SaturatingFp8Cast(act * scale_out);
}

}  // namespace

at::Tensor ScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                    const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                    bool fast_accum, TokenAxis tokens, GemmPath path) {
  CheckScaledMmArgs(a, b, scale_a, scale_b, bias, out_dtype, "ScaledMm");
  return RunGemmPath<at::Tensor>(
      a, path,
      [&](at::Tensor& out) {
        return FusedScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum, tokens, out);
      },
      [&] { return ReferenceScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum); });
}

at::Tensor ScaledMmAccumulate(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& accumulate,
                              bool fast_accum, GemmPath path) {
  const char* kOp = "ScaledMmAccumulate";
  TORCH_CHECK(accumulate.defined(), kOp, ": accumulate is undefined");
  CheckScaledMmArgs(a, b, scale_a, scale_b, at::Tensor(), accumulate.scalar_type(), kOp);
  const at::ScalarType dtype = accumulate.scalar_type();
  TORCH_CHECK((dtype == at::kFloat || Is16BitFloat(dtype)) && accumulate.dim() == 2 &&
                  accumulate.size(0) == a.size(0) && accumulate.size(1) == b.size(1) &&
                  accumulate.device() == a.device(),
              kOp, ": accumulate must be fp32, bf16 or fp16 [", a.size(0), ", ", b.size(1),
              "] on a's device, got ", accumulate.scalar_type(), " ", accumulate.sizes());
  return RunGemmPath<at::Tensor>(
      a, path,
      [&](at::Tensor& out) {
        out = accumulate;
        return FusedScaledMmAccumulate(a, b, scale_a, scale_b, accumulate, fast_accum);
      },
      [&] {
        return accumulate.add_(ReferenceScaledMm(a, b, scale_a, scale_b, at::Tensor(),
                                                 accumulate.scalar_type(), fast_accum));
      });
}

LinearGeluResult ScaledMmGelu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& bias,
                              at::ScalarType out_dtype, bool fast_accum, GemmPath path) {
  const char* kOp = "ScaledMmGelu";
  CheckScaledMmArgs(a, b, scale_a, scale_b, bias, out_dtype, kOp);
  TORCH_CHECK(bias.defined() && Is16BitFloat(out_dtype), kOp,
              ": needs a bias and a bf16 or fp16 output");
  return RunGemmPath<LinearGeluResult>(
      a, path,
      [&](LinearGeluResult& out) {
        return FusedScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum, TokenAxis::kM,
                             out.act, &out.pre);
      },
      [&] {
        at::Tensor pre = ReferenceScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum);
        at::Tensor act = at::gelu(pre, "tanh");
        return LinearGeluResult{std::move(act), std::move(pre)};
      });
}

at::Tensor ScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             const at::Tensor& scale_out, bool fast_accum, GemmPath path) {
  CheckScaledMmGeluToFp8Args(a, b, scale_a, scale_b, bias, scale_out, "ScaledMmGeluToFp8");
  return RunGemmPath<at::Tensor>(
      a, path,
      [&](at::Tensor& out) {
        return FusedScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum, out);
      },
      [&] {
        return ReferenceScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum);
      });
}

LinearGeluResult ScaledMmGeluAuxToFp8(const at::Tensor& a, const at::Tensor& b,
                                      const at::Tensor& scale_a, const at::Tensor& scale_b,
                                      const at::Tensor& bias, const at::Tensor& scale_out,
                                      const at::Tensor& amax_out, bool fast_accum, GemmPath path) {
  const char* kOp = "ScaledMmGeluAuxToFp8";
  CheckScaledMmGeluToFp8Args(a, b, scale_a, scale_b, bias, scale_out, kOp);
  TORCH_CHECK(amax_out.defined() && amax_out.numel() == 1 && amax_out.scalar_type() == at::kFloat &&
                  amax_out.device() == a.device(),
              kOp, ": amax_out must be one fp32 value on a's device");
  return RunGemmPath<LinearGeluResult>(
      a, path,
      [&](LinearGeluResult& out) {
        return FusedScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum, out.act,
                                      &out.pre, amax_out);
      },
      [&] {
        LinearGeluResult out;
        out.act = ReferenceScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum,
                                             &out.pre, amax_out);
        return out;
      });
}

}  // namespace padless::cuda
