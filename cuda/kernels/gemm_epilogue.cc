#include "padless/cuda/kernels/gemm_epilogue.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cstdint>

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <dlfcn.h>

#include <initializer_list>
#include <memory>
#include <string>
#endif

// cuBLAS(Lt) is column-major. A row-major [R, C] tensor with contiguous rows is, unchanged in
// memory, a column-major [C, R] matrix with leading dimension C. So a row-major product
//   Out[T, n] = P[T, k] @ Q[k, n]
// is computed as the column-major product Out^T[n, T] = Q^T[n, k] @ P^T[k, T]: cuBLAS's A is our
// right-hand factor, B our left-hand one, and D (m = n rows, T columns, ld = n) is Out as stored.
// Each GEMM below spells out its A, B, D and transposes in that view.

namespace padless::cuda {
namespace {

thread_local bool g_last_fused = false;

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

void CheckLinearGeluArgs(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  constexpr const char* kOp = "LinearGelu";
  CheckMatrix(x, kOp, "x");
  CheckMatrix(weight, kOp, "weight");
  TORCH_CHECK(bias.defined() && bias.dim() == 1, kOp, ": bias must be 1-D, got shape ",
              bias.defined() ? bias.sizes() : at::IntArrayRef{});
  CheckSameKind(x, weight, kOp, "x", "weight");
  CheckSameKind(x, bias, kOp, "x", "bias");
  TORCH_CHECK(x.size(1) == weight.size(1), kOp, ": x is ", x.sizes(), " and weight is ",
              weight.sizes(), "; need x [T, K] and weight [N, K]");
  TORCH_CHECK(bias.size(0) == weight.size(0), kOp, ": bias has ", bias.size(0),
              " elements but weight has ", weight.size(0), " rows");
}

void CheckGeluBackwardArgs(const at::Tensor& grad, const at::Tensor& weight,
                           const at::Tensor& pre) {
  constexpr const char* kOp = "MatmulGeluBackward";
  CheckMatrix(grad, kOp, "grad");
  CheckMatrix(weight, kOp, "weight");
  CheckMatrix(pre, kOp, "pre");
  CheckSameKind(grad, weight, kOp, "grad", "weight");
  CheckSameKind(grad, pre, kOp, "grad", "pre");
  TORCH_CHECK(grad.size(1) == weight.size(0) && pre.size(0) == grad.size(0) &&
                  pre.size(1) == weight.size(1),
              kOp, ": grad is ", grad.sizes(), ", weight ", weight.sizes(), ", pre ", pre.sizes(),
              "; need grad [T, N], weight [N, F], pre [T, F]");
}

void CheckWeightGradArgs(const at::Tensor& grad, const at::Tensor& x) {
  constexpr const char* kOp = "LinearWeightGrad";
  CheckMatrix(grad, kOp, "grad");
  CheckMatrix(x, kOp, "x");
  CheckSameKind(grad, x, kOp, "grad", "x");
  TORCH_CHECK(grad.size(0) == x.size(0), kOp, ": grad is ", grad.sizes(), " and x is ", x.sizes(),
              "; need grad [T, N] and x [T, K] with the same T");
}

// --- The unfused ATen paths (no checks: the public functions check first).

LinearGeluResult ReferenceLinearGelu(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias) {
  at::Tensor pre = at::addmm(bias, x, weight.t());
  at::Tensor act = at::gelu(pre, "tanh");
  return {act, pre};
}

// Bias gradients sum in fp32 at least (fp64 rows keep fp64).
at::Tensor ColumnSum(const at::Tensor& t) {
  return at::sum(t, {0}, /*keepdim=*/false,
                 t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
}

GeluBackwardResult ReferenceMatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                                               const at::Tensor& pre) {
  at::Tensor d_pre = at::gelu_backward(at::mm(grad, weight), pre, "tanh");
  return {d_pre, ColumnSum(d_pre)};
}

WeightGradResult ReferenceLinearWeightGrad(const at::Tensor& grad, const at::Tensor& x,
                                           bool need_bias) {
  at::Tensor d_weight = at::mm(grad.t(), x);
  at::Tensor d_bias;
  if (need_bias) d_bias = ColumnSum(grad);
  return {d_weight, d_bias};
}

#ifdef PADLESS_HAVE_CUDA_KERNELS
// --- cuBLASLt plumbing.

// cublasGetStatusName lives in libcublas, which we do not link; the status values are stable.
const char* StatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cublasStatus_t";
}

void CheckLt(cublasStatus_t s, const char* op, const char* call) {
  TORCH_CHECK(s == CUBLAS_STATUS_SUCCESS, op, ": ", call, " failed: ", StatusName(s), " (",
              static_cast<int>(s), ")");
}

// The cuBLASLt entry points, taken from the libcublasLt that LibTorch has already loaded (its
// handle and workspace come from LibTorch too). We do not link libcublasLt: a direct link would
// make the executable's RUNPATH pick the copy (toolkit or pip wheel, same soname) that LibTorch
// then also gets, possibly not the version it was built with, and it puts both cuda lib dirs in
// a conflicting RUNPATH order.
struct LtApi {
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&cublasLtMatmul) Matmul;
};

template <typename Fn>
void LoadSymbol(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  TORCH_CHECK(fn != nullptr, "cuBLASLt: ", name, " not found in the loaded libcublasLt");
}

LtApi LoadLtApi() {
  // The soname of the major version our header describes; RTLD_NOLOAD returns the copy already
  // in the process (a NEEDED library of libtorch_cuda) and never loads another.
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  TORCH_CHECK(lib != nullptr, "cuBLASLt: ", soname,
              " is not loaded in this process (LibTorch's CUDA library should have loaded it)");
  LtApi api{};
  LoadSymbol(lib, "cublasLtMatmulDescCreate", api.MatmulDescCreate);
  LoadSymbol(lib, "cublasLtMatmulDescDestroy", api.MatmulDescDestroy);
  LoadSymbol(lib, "cublasLtMatmulDescSetAttribute", api.MatmulDescSetAttribute);
  LoadSymbol(lib, "cublasLtMatrixLayoutCreate", api.MatrixLayoutCreate);
  LoadSymbol(lib, "cublasLtMatrixLayoutDestroy", api.MatrixLayoutDestroy);
  LoadSymbol(lib, "cublasLtMatmulPreferenceCreate", api.MatmulPreferenceCreate);
  LoadSymbol(lib, "cublasLtMatmulPreferenceDestroy", api.MatmulPreferenceDestroy);
  LoadSymbol(lib, "cublasLtMatmulPreferenceSetAttribute", api.MatmulPreferenceSetAttribute);
  LoadSymbol(lib, "cublasLtMatmulAlgoGetHeuristic", api.MatmulAlgoGetHeuristic);
  LoadSymbol(lib, "cublasLtMatmul", api.Matmul);
  return api;  // `lib` stays open for the life of the process
}

const LtApi& Lt() {
  static const LtApi api = LoadLtApi();  // thread-safe; a failure throws again on the next call
  return api;
}

struct DescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const { Lt().MatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayout_t d) const { Lt().MatrixLayoutDestroy(d); }
  void operator()(cublasLtMatmulPreference_t d) const { Lt().MatmulPreferenceDestroy(d); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

// One column-major matrix as stored: rows x cols with leading dimension ld (= rows here: every
// operand is a contiguous row-major tensor).
struct Operand {
  const void* ptr;
  uint64_t rows, cols;
};

// D = op(A) @ op(B) with an epilogue; C aliases D (beta = 0, so C is never read).
struct GemmSpec {
  const char* op = "";
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  Operand a = {}, b = {};
  void* d = nullptr;
  uint64_t d_rows = 0, d_cols = 0;
  cudaDataType_t dtype = CUDA_R_16BF;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;                    // bias (GELU_AUX_BIAS) or its gradient (BGRAD epilogues)
  cudaDataType_t bias_dtype = CUDA_R_32F;  // of `bias`
  void* aux = nullptr;  // the GELU input: written (GELU_AUX_BIAS) or read (DGELU_BGRAD)
};

template <typename T>
void SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
             const char* op) {
  CheckLt(Lt().MatmulDescSetAttribute(desc, attr, &value, sizeof(value)), op,
          "cublasLtMatmulDescSetAttribute");
}

Layout MakeLayout(cudaDataType_t dtype, uint64_t rows, uint64_t cols, const char* op) {
  cublasLtMatrixLayout_t raw = nullptr;
  CheckLt(Lt().MatrixLayoutCreate(&raw, dtype, rows, cols, static_cast<int64_t>(rows)), op,
          "cublasLtMatrixLayoutCreate");
  return Layout(raw);
}

MatmulDesc MakeDesc(const GemmSpec& g) {
  cublasLtMatmulDesc_t raw = nullptr;
  // fp32 accumulation and fp32 alpha / beta, as torch's own bf16 / fp16 GEMMs.
  CheckLt(Lt().MatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F), g.op,
          "cublasLtMatmulDescCreate");
  MatmulDesc desc(raw);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_a, g.op);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_b, g.op);
  SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, g.epilogue, g.op);
  if (g.bias != nullptr) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, g.op);
    // Unset, the bias (gradient) has D's type; set only to ask for something else (fp32).
    if (g.bias_dtype != g.dtype) {
      SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(g.bias_dtype), g.op);
    }
  }
  if (g.aux != nullptr) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, g.op);
    // The aux matrix has D's shape and layout; cuBLASLt wants its ld divisible by 8 (checked by
    // the callers through the multiple-of-8 feature dimensions).
    SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<int64_t>(g.d_rows), g.op);
  }
  return desc;
}

// The largest power of two <= 256 dividing the address: the heuristic otherwise assumes 256-byte
// aligned operands and may pick a kernel that faults on less aligned ones.
uint32_t Alignment(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && addr % (2 * a) == 0) a *= 2;
  return a;
}

Preference MakePreference(const GemmSpec& g, size_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  CheckLt(Lt().MatmulPreferenceCreate(&raw), g.op, "cublasLtMatmulPreferenceCreate");
  Preference pref(raw);
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    CheckLt(Lt().MatmulPreferenceSetAttribute(raw, attr, &value, sizeof(value)), g.op,
            "cublasLtMatmulPreferenceSetAttribute");
  };
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Alignment(g.a.ptr));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Alignment(g.b.ptr));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Alignment(g.d));
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, Alignment(g.d));
  return pref;
}

// Runs the GEMM on the current stream. Returns false, having launched nothing, when cuBLASLt's
// heuristic has no algorithm for this configuration or rejects it (the caller then tries another or
// falls back); every other cuBLASLt failure throws. Descriptors and the heuristic's choice are made
// per call and cached nowhere, so nothing can leak across devices or streams (the host cost is a
// few microseconds, small beside a BERT-sized FFN GEMM).
bool RunGemm(const GemmSpec& g) {
  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  // LibTorch's cuBLASLt workspace for this handle and the current stream (what its own addmm
  // uses; safe to share because work on one stream is serialized), not a per-call allocation.
  void* workspace = at::cuda::getCUDABlasLtWorkspace();
  const size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  const MatmulDesc desc = MakeDesc(g);
  const Layout a = MakeLayout(g.dtype, g.a.rows, g.a.cols, g.op);
  const Layout b = MakeLayout(g.dtype, g.b.rows, g.b.cols, g.op);
  const Layout d = MakeLayout(g.dtype, g.d_rows, g.d_cols, g.op);
  const Preference pref = MakePreference(g, workspace_bytes);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  const cublasStatus_t s = Lt().MatmulAlgoGetHeuristic(
      handle, desc.get(), a.get(), b.get(), d.get(), d.get(), pref.get(), 1, &result, &found);
  // INVALID_VALUE from the heuristic means this cuBLASLt rejects the configuration itself (seen
  // on the H200 with cuBLASLt 13 for the BGRAD epilogues); like "no algorithm", the caller then
  // tries another configuration or the unfused ops, and the GPU tests check which one ran.
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE ||
      (s == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return false;
  }
  CheckLt(s, g.op, "cublasLtMatmulAlgoGetHeuristic");
  const float alpha = 1.0f, beta = 0.0f;
  CheckLt(Lt().Matmul(handle, desc.get(), &alpha, g.a.ptr, a.get(), g.b.ptr, b.get(), &beta, g.d,
                      d.get(), g.d, d.get(), &result.algo, workspace, workspace_bytes,
                      c10::cuda::getCurrentCUDAStream()),
          g.op, "cublasLtMatmul");
  return true;
}

// Runs a bias-gradient GEMM asking for an fp32 bias gradient first and, when cuBLASLt offers no
// algorithm for that, for one in the D dtype (its documented default), upcast afterwards.
// Returns the fp32 gradient, or an undefined tensor when neither ran.
at::Tensor RunGemmWithBiasGrad(GemmSpec g, int64_t bias_len, const at::TensorOptions& options) {
  at::Tensor d_bias = at::empty({bias_len}, options.dtype(at::kFloat));
  g.bias = d_bias.data_ptr();
  g.bias_dtype = CUDA_R_32F;
  if (RunGemm(g)) return d_bias;
  at::Tensor d_bias_low = at::empty({bias_len}, options);
  g.bias = d_bias_low.data_ptr();
  g.bias_dtype = g.dtype;
  if (RunGemm(g)) return d_bias_low.to(at::kFloat);
  return at::Tensor();
}

uint64_t U64(int64_t v) { return static_cast<uint64_t>(v); }

bool Is16BitFloat(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

cudaDataType_t CudaType(at::ScalarType t) { return t == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F; }

// The shape / dtype / device half of "when the fused path runs" (header); pointers are checked
// after the inputs were made contiguous.
bool FusableShapes(const at::Tensor& t, std::initializer_list<int64_t> features, int64_t rows) {
  if (!t.is_cuda() || !Is16BitFloat(t.scalar_type()) || rows == 0) return false;
  for (int64_t f : features) {
    if (f == 0 || f % 8 != 0) return false;
  }
  return true;
}

bool Aligned16(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (Alignment(t->data_ptr()) < 16) return false;
  }
  return true;
}

// --- The three fused GEMMs. Each returns false (nothing launched) when it cannot run.

// Out^T[N, T] = W[N, K]-as-stored (column-major [K, N], transposed) @ x^T (column-major [K, T]).
bool FusedLinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     LinearGeluResult& out) {
  const int64_t t = x.size(0), k = x.size(1), n = weight.size(0);
  if (!FusableShapes(x, {k, n}, t)) return false;
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.contiguous();
  if (!Aligned16({&xc, &wc, &bc})) return false;
  at::Tensor act = at::empty({t, n}, x.options());
  at::Tensor pre = at::empty({t, n}, x.options());
  GemmSpec g;
  g.op = "LinearGelu";
  g.trans_a = CUBLAS_OP_T;
  g.a = {wc.data_ptr(), U64(k), U64(n)};
  g.b = {xc.data_ptr(), U64(k), U64(t)};
  g.d = act.data_ptr();
  g.d_rows = U64(n);
  g.d_cols = U64(t);
  g.dtype = CudaType(x.scalar_type());
  g.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  g.bias = bc.data_ptr();
  g.bias_dtype = g.dtype;  // the input bias, in the inputs' dtype
  g.aux = pre.data_ptr();
  if (!RunGemm(g)) return false;
  out = {act, pre};
  return true;
}

// d_pre^T[F, T] = W[N, F]-as-stored (column-major [F, N]) @ grad^T (column-major [N, T]); the
// DGELU epilogue multiplies by gelu'(aux = pre^T, same layout as D), and BGRAD sums each of D's F
// rows over its T columns: the column sum of d_pre over tokens.
bool FusedMatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                             const at::Tensor& pre, GeluBackwardResult& out) {
  const int64_t t = grad.size(0), n = grad.size(1), f = weight.size(1);
  if (!FusableShapes(grad, {n, f}, t)) return false;
  const at::Tensor gc = grad.contiguous(), wc = weight.contiguous(), pc = pre.contiguous();
  if (!Aligned16({&gc, &wc, &pc})) return false;
  at::Tensor d_pre = at::empty({t, f}, grad.options());
  GemmSpec g;
  g.op = "MatmulGeluBackward";
  g.a = {wc.data_ptr(), U64(f), U64(n)};
  g.b = {gc.data_ptr(), U64(n), U64(t)};
  g.d = d_pre.data_ptr();
  g.d_rows = U64(f);
  g.d_cols = U64(t);
  g.dtype = CudaType(grad.scalar_type());
  g.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
  g.aux = pc.data_ptr();  // only read by DGELU
  at::Tensor d_bias = RunGemmWithBiasGrad(g, f, grad.options());
  if (!d_bias.defined()) return false;
  out = {d_pre, d_bias};
  return true;
}

// d_weight^T[K, N] = x^T (column-major [K, T]) @ grad (column-major [N, T], transposed to
// [T, N]); the GEMM's k is T. BGRADB sums op(B) = grad[T, N] over k = T per column of D: the
// column sum of grad over tokens, [N]. Without need_bias a plain GEMM (DEFAULT epilogue).
bool FusedLinearWeightGrad(const at::Tensor& grad, const at::Tensor& x, bool need_bias,
                           WeightGradResult& out) {
  const int64_t t = grad.size(0), n = grad.size(1), k = x.size(1);
  if (!FusableShapes(grad, {n, k}, t)) return false;
  const at::Tensor gc = grad.contiguous(), xc = x.contiguous();
  if (!Aligned16({&gc, &xc})) return false;
  at::Tensor d_weight = at::empty({n, k}, grad.options());
  GemmSpec g;
  g.op = "LinearWeightGrad";
  g.trans_b = CUBLAS_OP_T;
  g.a = {xc.data_ptr(), U64(k), U64(t)};
  g.b = {gc.data_ptr(), U64(n), U64(t)};
  g.d = d_weight.data_ptr();
  g.d_rows = U64(k);
  g.d_cols = U64(n);
  g.dtype = CudaType(grad.scalar_type());
  g.epilogue = need_bias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
  at::Tensor d_bias;
  if (need_bias) {
    d_bias = RunGemmWithBiasGrad(g, n, grad.options());
    if (!d_bias.defined()) return false;
  } else if (!RunGemm(g)) {
    return false;
  }
  out = {d_weight, d_bias};
  return true;
}
#else
// Without the CUDA kernels there is no fused path.
template <typename... Args>
bool FusedLinearGelu(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedMatmulGeluBackward(Args&&...) {
  return false;
}
template <typename... Args>
bool FusedLinearWeightGrad(Args&&...) {
  return false;
}
#endif  // PADLESS_HAVE_CUDA_KERNELS

// Shared by the public functions and their reference:: twins: no autograd, then the fused path
// when allowed and `lead` is on a CUDA device, else (or when it declines) the reference.
template <typename Result, typename Fused, typename Reference>
Result Run(const at::Tensor& lead, bool allow_fused, Fused&& fused, Reference&& reference) {
  const at::NoGradGuard no_grad;
  g_last_fused = false;
#ifdef PADLESS_HAVE_CUDA_KERNELS
  if (allow_fused && lead.is_cuda()) {
    const c10::cuda::CUDAGuard guard(lead.device());
    Result out;
    if (fused(out)) {
      g_last_fused = true;
      return out;
    }
  }
#else
  (void)lead;
  (void)allow_fused;
  (void)fused;
#endif
  return reference();
}

LinearGeluResult LinearGeluEntry(const at::Tensor& x, const at::Tensor& weight,
                                 const at::Tensor& bias, bool allow_fused) {
  CheckLinearGeluArgs(x, weight, bias);
  return Run<LinearGeluResult>(
      x, allow_fused, [&](LinearGeluResult& out) { return FusedLinearGelu(x, weight, bias, out); },
      [&] { return ReferenceLinearGelu(x, weight, bias); });
}

GeluBackwardResult MatmulGeluBackwardEntry(const at::Tensor& grad, const at::Tensor& weight,
                                           const at::Tensor& pre, bool allow_fused) {
  CheckGeluBackwardArgs(grad, weight, pre);
  return Run<GeluBackwardResult>(
      grad, allow_fused,
      [&](GeluBackwardResult& out) { return FusedMatmulGeluBackward(grad, weight, pre, out); },
      [&] { return ReferenceMatmulGeluBackward(grad, weight, pre); });
}

WeightGradResult LinearWeightGradEntry(const at::Tensor& grad, const at::Tensor& x, bool need_bias,
                                       bool allow_fused) {
  CheckWeightGradArgs(grad, x);
  return Run<WeightGradResult>(
      grad, allow_fused,
      [&](WeightGradResult& out) { return FusedLinearWeightGrad(grad, x, need_bias, out); },
      [&] { return ReferenceLinearWeightGrad(grad, x, need_bias); });
}

}  // namespace

LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearGeluEntry(x, weight, bias, /*allow_fused=*/true);
}

GeluBackwardResult MatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                                      const at::Tensor& pre) {
  return MatmulGeluBackwardEntry(grad, weight, pre, /*allow_fused=*/true);
}

WeightGradResult LinearWeightGrad(const at::Tensor& grad, const at::Tensor& x, bool need_bias) {
  return LinearWeightGradEntry(grad, x, need_bias, /*allow_fused=*/true);
}

bool LastGemmEpilogueWasFused() { return g_last_fused; }

namespace reference {

LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearGeluEntry(x, weight, bias, /*allow_fused=*/false);
}

GeluBackwardResult MatmulGeluBackward(const at::Tensor& grad, const at::Tensor& weight,
                                      const at::Tensor& pre) {
  return MatmulGeluBackwardEntry(grad, weight, pre, /*allow_fused=*/false);
}

WeightGradResult LinearWeightGrad(const at::Tensor& grad, const at::Tensor& x, bool need_bias) {
  return LinearWeightGradEntry(grad, x, need_bias, /*allow_fused=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
