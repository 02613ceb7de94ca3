// The 16-bit linears of gemm_epilogue.h (LinearGelu, LinearBiasGelu, LinearBias, Linear and the two
// backward GEMMs): their argument checks, their cuBLASLt GEMMs and their unfused ATen paths.
#include "padless/cuda/kernels/gemm_epilogue.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdint>

#include "src/gemm_dispatch.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <cublasLt.h>

#include <initializer_list>

#include "src/cublaslt_api.h"
#include "src/gemm_algo_cache.h"
#endif

namespace padless::cuda {
namespace {

using internal::Is16BitFloat;
using internal::RunGemmPath;

// --- Argument checks (shared by both paths, so that broken input fails the same way everywhere).

void CheckMatrix(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK(t.dim() == 2, op, ": ", name, " must be 2-D, got shape ", t.sizes());
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op, ": ", name,
              " must be a floating-point tensor, got ", t.scalar_type());
}

void CheckSameKind(const at::Tensor& a, const at::Tensor& b, const char* op, const char* a_name,
                   const char* b_name) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), op, ": ", a_name, " is ", a.scalar_type(),
              " but ", b_name, " is ", b.scalar_type(), " (all inputs must share one dtype)");
  TORCH_CHECK(a.device() == b.device(), op, ": ", a_name, " is on ", a.device(), " but ", b_name,
              " is on ", b.device());
}

// x [T, K] and weight [N, K]; a bias [N] unless `has_bias` is false (Linear).
void CheckLinearArgs(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     const char* kOp, bool has_bias = true) {
  CheckMatrix(x, kOp, "x");
  CheckMatrix(weight, kOp, "weight");
  CheckSameKind(x, weight, kOp, "x", "weight");
  TORCH_CHECK(x.size(1) == weight.size(1), kOp, ": x is ", x.sizes(), " and weight is ",
              weight.sizes(), "; need x [T, K] and weight [N, K]");
  if (!has_bias) return;
  TORCH_CHECK(bias.defined() && bias.dim() == 1, kOp, ": bias must be 1-D, got shape ",
              bias.defined() ? bias.sizes() : at::IntArrayRef{});
  CheckSameKind(x, bias, kOp, "x", "bias");
  TORCH_CHECK(bias.size(0) == weight.size(0), kOp, ": bias has ", bias.size(0),
              " elements but weight has ", weight.size(0), " rows");
}

// dy [T, N] and weight [N, K] (LinearInputGrad) or x [T, K] (LinearWeightGrad, weight_rows false).
void CheckGradArgs(const at::Tensor& dy, const at::Tensor& other, const char* op,
                   const char* other_name, bool weight_rows) {
  CheckMatrix(dy, op, "dy");
  CheckMatrix(other, op, other_name);
  CheckSameKind(dy, other, op, "dy", other_name);
  const int64_t dy_dim = weight_rows ? 1 : 0;
  TORCH_CHECK(dy.size(dy_dim) == other.size(0), op, ": dy is ", dy.sizes(), " and ", other_name,
              " is ", other.sizes(),
              weight_rows ? "; need dy [T, N] and weight [N, K]" : "; need dy [T, N] and x [T, K]");
}

// --- The unfused ATen paths (no checks: the public functions check first).

LinearGeluResult ReferenceLinearGelu(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias) {
  at::Tensor pre = at::addmm(bias, x, weight.t());
  at::Tensor act = at::gelu(pre, "tanh");
  return {act, pre};
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
using internal::CudaType;
using internal::GemmSpec;
using internal::RunGemm;
using internal::TokenDim;
using internal::U64;

// The shape / dtype / device half of "when the fused path runs" (header); pointers are checked
// after the inputs were made contiguous.
bool FusableShapes(const at::Tensor& t, std::initializer_list<int64_t> features, int64_t rows) {
  if (!t.is_cuda() || !Is16BitFloat(t.scalar_type()) || rows == 0) return false;
  for (int64_t f : features) {
    if (f == 0 || f % 8 != 0) return false;
  }
  return true;
}

// --- The fused GEMM. Returns false (nothing launched) when it cannot run.

// Out^T[N, T] = W[N, K]-as-stored (column-major [K, N], transposed) @ x^T (column-major [K, T]),
// with the bias (when defined) added in the epilogue and, for GELU_AUX_BIAS, GELU applied to D
// with the pre-activation written to `pre`. Returns the output [T, N], or undefined when it cannot
// run.
at::Tensor FusedLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       cublasLtEpilogue_t epilogue, at::Tensor* pre, const char* op) {
  const int64_t t = x.size(0), k = x.size(1), n = weight.size(0);
  if (!FusableShapes(x, {k, n}, t)) return at::Tensor();
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
  const at::Tensor bc = bias.defined() ? bias.contiguous() : at::Tensor();
  if (!internal::Aligned16({&xc, &wc, &bc})) return at::Tensor();
  at::Tensor out = at::empty({t, n}, x.options());
  GemmSpec g;
  g.op = op;
  g.trans_a = CUBLAS_OP_T;
  g.a = {wc.data_ptr(), U64(k), U64(n)};
  g.b = {xc.data_ptr(), U64(k), U64(t)};
  g.d = out.data_ptr();
  g.d_rows = U64(n);
  g.d_cols = U64(t);
  g.dtype = g.d_dtype = CudaType(x.scalar_type());
  g.epilogue = epilogue;
  g.bias = bc.defined() ? bc.data_ptr() : nullptr;
  if (pre != nullptr) {
    *pre = at::empty({t, n}, x.options());
    g.aux = pre->data_ptr();
  }
  return RunGemm(g) ? out : at::Tensor();
}

bool FusedLinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     LinearGeluResult& out) {
  out.act = FusedLinear(x, weight, bias, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, &out.pre, "LinearGelu");
  return out.act.defined();
}

bool FusedLinearBiasGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                         at::Tensor& out) {
  out = FusedLinear(x, weight, bias, CUBLASLT_EPILOGUE_GELU_BIAS, nullptr, "LinearBiasGelu");
  return out.defined();
}

bool FusedLinearBias(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     at::Tensor& out) {
  out = FusedLinear(x, weight, bias, CUBLASLT_EPILOGUE_BIAS, nullptr, "LinearBias");
  return out.defined();
}

bool FusedLinearNoBias(const at::Tensor& x, const at::Tensor& weight, at::Tensor& out) {
  out = FusedLinear(x, weight, at::Tensor(), CUBLASLT_EPILOGUE_DEFAULT, nullptr, "Linear");
  return out.defined();
}

// out[T, K] = dy[T, N] @ W[N, K] (+ out when `accumulate` is defined: then out is accumulate):
// column-major out^T [K, T] = W-as-stored [K, N] @ dy^T [N, T].
bool FusedInputGrad(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& accumulate,
                    at::Tensor& out) {
  const int64_t t = dy.size(0), n = dy.size(1), k = weight.size(1);
  if (!FusableShapes(dy, {k, n}, t)) return false;
  if (accumulate.defined() && !accumulate.is_contiguous()) return false;
  const at::Tensor dyc = dy.contiguous(), wc = weight.contiguous();
  const at::Tensor target = accumulate.defined() ? accumulate : at::empty({t, k}, dy.options());
  if (!internal::Aligned16({&dyc, &wc, &target})) return false;
  GemmSpec g;
  g.op = "LinearInputGrad";
  g.a = {wc.data_ptr(), U64(k), U64(n)};
  g.b = {dyc.data_ptr(), U64(n), U64(t)};
  g.d = target.data_ptr();
  g.d_rows = U64(k);
  g.d_cols = U64(t);
  g.dtype = g.d_dtype = CudaType(dy.scalar_type());
  g.accumulate = accumulate.defined();
  if (!RunGemm(g)) return false;
  out = target;
  return true;
}

// out[N, K] = dy^T [N, T] @ x [T, K] in fp32: column-major out^T [K, N] = x^T [K, T] @ dy [T, N],
// where dy-as-stored is column-major [N, T], hence transposed. T is the reduced dimension.
bool FusedWeightGrad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& out) {
  const int64_t t = dy.size(0), n = dy.size(1), k = x.size(1);
  if (!FusableShapes(dy, {k, n}, t)) return false;
  const at::Tensor dyc = dy.contiguous(), xc = x.contiguous();
  const at::Tensor target = at::empty({n, k}, dy.options().dtype(at::kFloat));
  if (!internal::Aligned16({&dyc, &xc, &target})) return false;
  GemmSpec g;
  g.op = "LinearWeightGrad";
  g.trans_b = CUBLAS_OP_T;
  g.a = {xc.data_ptr(), U64(k), U64(t)};
  g.b = {dyc.data_ptr(), U64(n), U64(t)};
  g.d = target.data_ptr();
  g.d_rows = U64(k);
  g.d_cols = U64(n);
  g.dtype = CudaType(dy.scalar_type());
  g.d_dtype = CUDA_R_32F;
  g.token_dim = TokenDim::kK;
  if (!RunGemm(g)) return false;
  out = target;
  return true;
}

#else
// Without the CUDA kernels there is no fused path.
template <typename... Args>
bool FusedLinearGelu(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedLinearBias(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedLinearBiasGelu(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedLinearNoBias(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedInputGrad(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedWeightGrad(Args&&...) {
  return false;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

}  // namespace

LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            GemmPath path) {
  CheckLinearArgs(x, weight, bias, "LinearGelu");
  return RunGemmPath<LinearGeluResult>(
      x, path, [&](LinearGeluResult& out) { return FusedLinearGelu(x, weight, bias, out); },
      [&] { return ReferenceLinearGelu(x, weight, bias); });
}

at::Tensor LinearBiasGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                          GemmPath path) {
  CheckLinearArgs(x, weight, bias, "LinearBiasGelu");
  return RunGemmPath<at::Tensor>(
      x, path, [&](at::Tensor& out) { return FusedLinearBiasGelu(x, weight, bias, out); },
      [&] { return at::gelu(at::addmm(bias, x, weight.t()), "tanh"); });
}

at::Tensor LinearBias(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      GemmPath path) {
  CheckLinearArgs(x, weight, bias, "LinearBias");
  return RunGemmPath<at::Tensor>(
      x, path, [&](at::Tensor& out) { return FusedLinearBias(x, weight, bias, out); },
      [&] { return at::addmm(bias, x, weight.t()); });
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& weight, GemmPath path) {
  CheckLinearArgs(x, weight, at::Tensor(), "Linear", /*has_bias=*/false);
  return RunGemmPath<at::Tensor>(
      x, path, [&](at::Tensor& out) { return FusedLinearNoBias(x, weight, out); },
      [&] { return x.mm(weight.t()); });
}

at::Tensor LinearInputGrad(const at::Tensor& dy, const at::Tensor& weight,
                           const at::Tensor& accumulate, GemmPath path) {
  const char* kOp = "LinearInputGrad";
  CheckGradArgs(dy, weight, kOp, "weight", /*weight_rows=*/true);
  if (accumulate.defined()) {
    CheckSameKind(dy, accumulate, kOp, "dy", "accumulate");
    TORCH_CHECK(accumulate.dim() == 2 && accumulate.size(0) == dy.size(0) &&
                    accumulate.size(1) == weight.size(1),
                kOp, ": accumulate is ", accumulate.sizes(), "; need [", dy.size(0), ", ",
                weight.size(1), "]");
  }
  return RunGemmPath<at::Tensor>(
      dy, path, [&](at::Tensor& out) { return FusedInputGrad(dy, weight, accumulate, out); },
      [&] { return accumulate.defined() ? accumulate.addmm_(dy, weight) : dy.mm(weight); });
}

at::Tensor LinearWeightGrad(const at::Tensor& dy, const at::Tensor& x, GemmPath path) {
  CheckGradArgs(dy, x, "LinearWeightGrad", "x", /*weight_rows=*/false);
  return RunGemmPath<at::Tensor>(
      dy, path, [&](at::Tensor& out) { return FusedWeightGrad(dy, x, out); },
      [&] {
        if (dy.is_cuda() && Is16BitFloat(dy.scalar_type())) return at::mm(dy.t(), x, at::kFloat);
        return dy.t().mm(x);
      });
}

}  // namespace padless::cuda
