#include "padless/cuda/kernels/gemm_epilogue.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "src/fp8_reference.h"
#include "src/op_util.h"

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <dlfcn.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#endif

// cuBLAS(Lt) is column-major. A row-major [R, C] tensor with contiguous rows is, unchanged in
// memory, a column-major [C, R] matrix with leading dimension C. So a row-major product
//   Out[T, n] = P[T, k] @ Q[k, n]
// is computed as the column-major product Out^T[n, T] = Q^T[n, k] @ P^T[k, T]: cuBLAS's A is our
// right-hand factor, B our left-hand one, and D (m = n rows, T columns, ld = n) is Out as stored.
// The GEMM below spells out its A, B, D and transposes in that view.

namespace padless::cuda {
namespace {

using internal::Is16BitFloat;
using internal::IsFp8;

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

// --- The unfused ATen paths (no checks: the public functions check first).

LinearGeluResult ReferenceLinearGelu(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias) {
  at::Tensor pre = at::addmm(bias, x, weight.t());
  at::Tensor act = at::gelu(pre, "tanh");
  return {act, pre};
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

// Which of the GEMM's dimensions is the token count T (it changes with every batch; the
// algorithm cache rounds it up to a multiple of 1024). kNone: the cache keys the exact shape.
enum class TokenDim { kN, kK, kNone };

// D = op(A) @ op(B) (+ D when `accumulate`) with an epilogue; C aliases D. m = D's rows, n = D's
// columns, k = the reduced dimension.
struct GemmSpec {
  const char* op = "";
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  Operand a = {}, b = {};
  void* d = nullptr;
  uint64_t d_rows = 0, d_cols = 0;
  cudaDataType_t dtype = CUDA_R_16BF;    // A, and B unless b_dtype is set
  cudaDataType_t d_dtype = CUDA_R_16BF;  // C and D
  // FP8: B's own type (E5M2 gradients against E4M3 weights), the fp32 device scalars that scale A
  // and B, and whether the tensor cores may accumulate in reduced precision.
  std::optional<cudaDataType_t> b_dtype;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  bool fast_accum = false;
  bool accumulate = false;  // beta = 1: D += op(A) @ op(B)
  TokenDim token_dim = TokenDim::kN;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;  // in C's dtype (cuBLASLt's default bias type is D's)
  void* aux = nullptr;   // the GELU input, written by GELU_AUX_BIAS
  // An FP8 D: C's (and the bias's) 16-bit type, which cuBLASLt wants instead of D's (C itself is
  // then not passed: beta is 0), and the fp32 device scalar D is multiplied by after the epilogue.
  std::optional<cudaDataType_t> c_dtype;
  const void* d_scale = nullptr;
  void* amax_d = nullptr;  // fp32: set to max |D| before d_scale (overwritten, not folded)

  uint64_t k() const { return trans_a == CUBLAS_OP_N ? a.cols : a.rows; }
  cudaDataType_t BType() const { return b_dtype.value_or(dtype); }
  cudaDataType_t CType() const { return c_dtype.value_or(d_dtype); }
  bool Fp8() const { return a_scale != nullptr; }
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
  if (g.bias != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, g.op);
  if (g.Fp8()) {
    SetAttr(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, g.a_scale, g.op);
    SetAttr(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, g.b_scale, g.op);
    SetAttr(raw, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(g.fast_accum), g.op);
    // With FP8 inputs neither the bias's nor the aux output's type is implied by D's: both are
    // in C's 16-bit type.
    if (g.bias != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, g.CType(), g.op);
    if (g.aux != nullptr)
      SetAttr(raw, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, g.CType(), g.op);
    if (g.d_scale != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, g.d_scale, g.op);
    if (g.amax_d != nullptr) SetAttr(raw, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, g.amax_d, g.op);
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

// --- The algorithm cache.
//
// cublasLtMatmulAlgoGetHeuristic costs tens of microseconds of host time per call, and the token
// count T changes with every batch, so the heuristic's choice is kept per problem with T rounded
// up to a multiple of 1024. The key holds everything else the heuristic saw: device, dtype,
// epilogue, transposes, the GEMM's m and k, the operand alignments and the workspace size. An
// algorithm is a plain struct valid for any handle on its device. Only the algorithm is cached;
// descriptors are made per call (cheap) so nothing else can leak across devices or streams.
struct AlgoKey {
  int device;
  int dtype, b_dtype, d_dtype, epilogue, trans_a, trans_b;
  bool accumulate, fast_accum, amax_d;
  uint64_t m, n, k;  // the token dimension rounded up to a multiple of 1024
  uint32_t align_a, align_b, align_d;
  size_t workspace_bytes;
  auto Tie() const {
    return std::tie(device, dtype, b_dtype, d_dtype, epilogue, trans_a, trans_b, accumulate,
                    fast_accum, amax_d, m, n, k, align_a, align_b, align_d, workspace_bytes);
  }
  bool operator<(const AlgoKey& o) const { return Tie() < o.Tie(); }
};

uint64_t TokenBucket(uint64_t t) { return (t + 1023) / 1024 * 1024; }

AlgoKey KeyOf(const GemmSpec& g, size_t workspace_bytes) {
  const bool n_is_t = g.token_dim == TokenDim::kN;
  const bool k_is_t = g.token_dim == TokenDim::kK;
  return {c10::cuda::current_device(),
          static_cast<int>(g.dtype),
          static_cast<int>(g.BType()),
          static_cast<int>(g.d_dtype),
          static_cast<int>(g.epilogue),
          static_cast<int>(g.trans_a),
          static_cast<int>(g.trans_b),
          g.accumulate,
          g.fast_accum,
          g.amax_d != nullptr,
          g.d_rows,
          n_is_t ? TokenBucket(g.d_cols) : g.d_cols,
          k_is_t ? TokenBucket(g.k()) : g.k(),
          Alignment(g.a.ptr),
          Alignment(g.b.ptr),
          Alignment(g.d),
          workspace_bytes};
}

std::mutex g_algo_mutex;
std::map<AlgoKey, cublasLtMatmulAlgo_t> g_algos;  // a few entries: shapes x T buckets

std::optional<cublasLtMatmulAlgo_t> CachedAlgo(const AlgoKey& key) {
  const std::lock_guard<std::mutex> lock(g_algo_mutex);
  const auto it = g_algos.find(key);
  if (it == g_algos.end()) return std::nullopt;
  return it->second;
}

void CacheAlgo(const AlgoKey& key, const std::optional<cublasLtMatmulAlgo_t>& algo) {
  const std::lock_guard<std::mutex> lock(g_algo_mutex);
  if (algo) {
    g_algos[key] = *algo;
  } else {
    g_algos.erase(key);
  }
}

// The GEMM's token count: D's columns or the reduced dimension, 0 when no dimension is T.
uint64_t Tokens(const GemmSpec& g) {
  switch (g.token_dim) {
    case TokenDim::kN:
      return g.d_cols;
    case TokenDim::kK:
      return g.k();
    case TokenDim::kNone:
      return 0;
  }
  return 0;
}

// The workspace cuBLASLt may use. For a GEMM over a training-sized batch (kNoWorkspaceTokens or
// more tokens) none: with a workspace, the heuristic picks Hopper kernels with a dynamic tile
// scheduler, whose counter in the workspace cuBLASLt clears with a 4-byte memset before each
// launch (about 120 a FP8 step, each a kernel boundary no dependent launch hides). Without one it
// picks the same tile shapes with the static scheduler and no memset: on the H200 the BERT-base
// step's GEMMs took 7.33 ms against 7.40, and the step ran 0.3-0.5 % faster (FUSED_KERNELS.md,
// session 12). Smaller problems (serving batches) keep the workspace, where splitting K can pay.
constexpr uint64_t kNoWorkspaceTokens = 8192;
size_t WorkspaceBytes(const GemmSpec& g) {
  return Tokens(g) >= kNoWorkspaceTokens ? 0 : at::cuda::getCUDABlasLtWorkspaceSize();
}

// Runs the GEMM on the current stream. Returns false, having launched nothing, when cuBLASLt's
// heuristic has no algorithm for this configuration or rejects it (the caller falls back); every
// other cuBLASLt failure throws. A cached algorithm that cublasLtMatmul rejects for this exact
// problem (NOT_SUPPORTED / INVALID_VALUE: nothing launched) is dropped and the heuristic asked.
bool RunGemm(const GemmSpec& g) {
  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  // LibTorch's cuBLASLt workspace for this handle and the current stream (what its own addmm
  // uses; safe to share because work on one stream is serialized), not a per-call allocation.
  void* workspace = at::cuda::getCUDABlasLtWorkspace();
  const size_t workspace_bytes = WorkspaceBytes(g);
  const MatmulDesc desc = MakeDesc(g);
  const Layout a = MakeLayout(g.dtype, g.a.rows, g.a.cols, g.op);
  const Layout b = MakeLayout(g.BType(), g.b.rows, g.b.cols, g.op);
  const Layout d = MakeLayout(g.d_dtype, g.d_rows, g.d_cols, g.op);
  const Layout c = MakeLayout(g.CType(), g.d_rows, g.d_cols, g.op);
  // C aliases D unless their types differ (an FP8 D), when C is not read (as at::_scaled_mm).
  const void* c_ptr = g.c_dtype ? nullptr : g.d;
  const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  const auto matmul = [&](const cublasLtMatmulAlgo_t& algo) {
    return Lt().Matmul(handle, desc.get(), &alpha, g.a.ptr, a.get(), g.b.ptr, b.get(), &beta, c_ptr,
                       c.get(), g.d, d.get(), &algo, workspace, workspace_bytes,
                       c10::cuda::getCurrentCUDAStream());
  };
  const AlgoKey key = KeyOf(g, workspace_bytes);
  if (const std::optional<cublasLtMatmulAlgo_t> cached = CachedAlgo(key)) {
    const cublasStatus_t s = matmul(*cached);
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    if (s != CUBLAS_STATUS_NOT_SUPPORTED && s != CUBLAS_STATUS_INVALID_VALUE) {
      CheckLt(s, g.op, "cublasLtMatmul (cached algorithm)");
    }
    CacheAlgo(key, std::nullopt);
  }
  const Preference pref = MakePreference(g, workspace_bytes);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  const cublasStatus_t s = Lt().MatmulAlgoGetHeuristic(
      handle, desc.get(), a.get(), b.get(), c.get(), d.get(), pref.get(), 1, &result, &found);
  // INVALID_VALUE from the heuristic means this cuBLASLt rejects the configuration itself; like
  // "no algorithm", the caller then runs the unfused ops, and the GPU tests check which one ran.
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE ||
      (s == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return false;
  }
  CheckLt(s, g.op, "cublasLtMatmulAlgoGetHeuristic");
  CheckLt(matmul(result.algo), g.op, "cublasLtMatmul");
  CacheAlgo(key, result.algo);
  return true;
}

uint64_t U64(int64_t v) { return static_cast<uint64_t>(v); }

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

// Shared by LinearGelu and its reference:: twin: no autograd, then the fused path
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
  CheckLinearArgs(x, weight, bias, "LinearGelu");
  return Run<LinearGeluResult>(
      x, allow_fused, [&](LinearGeluResult& out) { return FusedLinearGelu(x, weight, bias, out); },
      [&] { return ReferenceLinearGelu(x, weight, bias); });
}

at::Tensor LinearBiasGeluEntry(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, bool allow_fused) {
  CheckLinearArgs(x, weight, bias, "LinearBiasGelu");
  return Run<at::Tensor>(
      x, allow_fused, [&](at::Tensor& out) { return FusedLinearBiasGelu(x, weight, bias, out); },
      [&] { return at::gelu(at::addmm(bias, x, weight.t()), "tanh"); });
}

at::Tensor LinearBiasEntry(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                           bool allow_fused) {
  CheckLinearArgs(x, weight, bias, "LinearBias");
  return Run<at::Tensor>(
      x, allow_fused, [&](at::Tensor& out) { return FusedLinearBias(x, weight, bias, out); },
      [&] { return at::addmm(bias, x, weight.t()); });
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

at::Tensor LinearInputGradEntry(const at::Tensor& dy, const at::Tensor& weight,
                                const at::Tensor& accumulate, bool allow_fused) {
  const char* kOp = "LinearInputGrad";
  CheckGradArgs(dy, weight, kOp, "weight", /*weight_rows=*/true);
  if (accumulate.defined()) {
    CheckSameKind(dy, accumulate, kOp, "dy", "accumulate");
    TORCH_CHECK(accumulate.dim() == 2 && accumulate.size(0) == dy.size(0) &&
                    accumulate.size(1) == weight.size(1),
                kOp, ": accumulate is ", accumulate.sizes(), "; need [", dy.size(0), ", ",
                weight.size(1), "]");
  }
  return Run<at::Tensor>(
      dy, allow_fused, [&](at::Tensor& out) { return FusedInputGrad(dy, weight, accumulate, out); },
      [&] { return accumulate.defined() ? accumulate.addmm_(dy, weight) : dy.mm(weight); });
}

at::Tensor LinearWeightGradEntry(const at::Tensor& dy, const at::Tensor& x, bool allow_fused) {
  CheckGradArgs(dy, x, "LinearWeightGrad", "x", /*weight_rows=*/false);
  return Run<at::Tensor>(
      dy, allow_fused, [&](at::Tensor& out) { return FusedWeightGrad(dy, x, out); },
      [&] {
        if (dy.is_cuda() && Is16BitFloat(dy.scalar_type())) return at::mm(dy.t(), x, at::kFloat);
        return dy.t().mm(x);
      });
}

at::Tensor LinearEntry(const at::Tensor& x, const at::Tensor& weight, bool allow_fused) {
  CheckLinearArgs(x, weight, at::Tensor(), "Linear", /*has_bias=*/false);
  return Run<at::Tensor>(
      x, allow_fused, [&](at::Tensor& out) { return FusedLinearNoBias(x, weight, out); },
      [&] { return x.mm(weight.t()); });
}

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

at::Tensor ReferenceScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             at::ScalarType out_dtype, bool fast_accum) {
  return at::_scaled_mm(a, b, scale_a, scale_b,
                        bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                        std::nullopt, out_dtype, fast_accum);
}

at::Tensor ScaledMmEntry(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                         const at::Tensor& scale_b, const at::Tensor& bias,
                         at::ScalarType out_dtype, bool fast_accum, TokenAxis tokens,
                         bool allow_fused) {
  CheckScaledMmArgs(a, b, scale_a, scale_b, bias, out_dtype, "ScaledMm");
  return Run<at::Tensor>(
      a, allow_fused,
      [&](at::Tensor& out) {
        return FusedScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum, tokens, out);
      },
      [&] { return ReferenceScaledMm(a, b, scale_a, scale_b, bias, out_dtype, fast_accum); });
}

LinearGeluResult ScaledMmGeluEntry(const at::Tensor& a, const at::Tensor& b,
                                   const at::Tensor& scale_a, const at::Tensor& scale_b,
                                   const at::Tensor& bias, at::ScalarType out_dtype,
                                   bool fast_accum, bool allow_fused) {
  const char* kOp = "ScaledMmGelu";
  CheckScaledMmArgs(a, b, scale_a, scale_b, bias, out_dtype, kOp);
  TORCH_CHECK(bias.defined() && Is16BitFloat(out_dtype), kOp,
              ": needs a bias and a bf16 or fp16 output");
  return Run<LinearGeluResult>(
      a, allow_fused,
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

at::Tensor ScaledMmAccumulateEntry(const at::Tensor& a, const at::Tensor& b,
                                   const at::Tensor& scale_a, const at::Tensor& scale_b,
                                   const at::Tensor& accumulate, bool fast_accum,
                                   bool allow_fused) {
  const char* kOp = "ScaledMmAccumulate";
  TORCH_CHECK(accumulate.defined(), kOp, ": accumulate is undefined");
  CheckScaledMmArgs(a, b, scale_a, scale_b, at::Tensor(), accumulate.scalar_type(), kOp);
  const at::ScalarType dtype = accumulate.scalar_type();
  TORCH_CHECK((dtype == at::kFloat || Is16BitFloat(dtype)) && accumulate.dim() == 2 &&
                  accumulate.size(0) == a.size(0) && accumulate.size(1) == b.size(1) &&
                  accumulate.device() == a.device(),
              kOp, ": accumulate must be fp32, bf16 or fp16 [", a.size(0), ", ", b.size(1),
              "] on a's device, got ", accumulate.scalar_type(), " ", accumulate.sizes());
  return Run<at::Tensor>(
      a, allow_fused,
      [&](at::Tensor& out) {
        out = accumulate;
        return FusedScaledMmAccumulate(a, b, scale_a, scale_b, accumulate, fast_accum);
      },
      [&] {
        return accumulate.add_(ReferenceScaledMm(a, b, scale_a, scale_b, at::Tensor(),
                                                 accumulate.scalar_type(), fast_accum));
      });
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

at::Tensor ScaledMmGeluToFp8Entry(const at::Tensor& a, const at::Tensor& b,
                                  const at::Tensor& scale_a, const at::Tensor& scale_b,
                                  const at::Tensor& bias, const at::Tensor& scale_out,
                                  bool fast_accum, bool allow_fused) {
  CheckScaledMmGeluToFp8Args(a, b, scale_a, scale_b, bias, scale_out, "ScaledMmGeluToFp8");
  return Run<at::Tensor>(
      a, allow_fused,
      [&](at::Tensor& out) {
        return FusedScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum, out);
      },
      [&] {
        return ReferenceScaledMmGeluToFp8(a, b, scale_a, scale_b, bias, scale_out, fast_accum);
      });
}

LinearGeluResult ScaledMmGeluAuxToFp8Entry(const at::Tensor& a, const at::Tensor& b,
                                           const at::Tensor& scale_a, const at::Tensor& scale_b,
                                           const at::Tensor& bias, const at::Tensor& scale_out,
                                           const at::Tensor& amax_out, bool fast_accum,
                                           bool allow_fused) {
  const char* kOp = "ScaledMmGeluAuxToFp8";
  CheckScaledMmGeluToFp8Args(a, b, scale_a, scale_b, bias, scale_out, kOp);
  TORCH_CHECK(amax_out.defined() && amax_out.numel() == 1 && amax_out.scalar_type() == at::kFloat &&
                  amax_out.device() == a.device(),
              kOp, ": amax_out must be one fp32 value on a's device");
  return Run<LinearGeluResult>(
      a, allow_fused,
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

}  // namespace

LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearGeluEntry(x, weight, bias, /*allow_fused=*/true);
}

at::Tensor ScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                    const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                    bool fast_accum, TokenAxis tokens) {
  return ScaledMmEntry(a, b, scale_a, scale_b, bias, out_dtype, fast_accum, tokens,
                       /*allow_fused=*/true);
}

LinearGeluResult ScaledMmGelu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& bias,
                              at::ScalarType out_dtype, bool fast_accum) {
  return ScaledMmGeluEntry(a, b, scale_a, scale_b, bias, out_dtype, fast_accum,
                           /*allow_fused=*/true);
}

at::Tensor LinearBias(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearBiasEntry(x, weight, bias, /*allow_fused=*/true);
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& weight) {
  return LinearEntry(x, weight, /*allow_fused=*/true);
}

at::Tensor LinearInputGrad(const at::Tensor& dy, const at::Tensor& weight,
                           const at::Tensor& accumulate) {
  return LinearInputGradEntry(dy, weight, accumulate, /*allow_fused=*/true);
}

at::Tensor LinearWeightGrad(const at::Tensor& dy, const at::Tensor& x) {
  return LinearWeightGradEntry(dy, x, /*allow_fused=*/true);
}

at::Tensor LinearBiasGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearBiasGeluEntry(x, weight, bias, /*allow_fused=*/true);
}

at::Tensor ScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             const at::Tensor& scale_out, bool fast_accum) {
  return ScaledMmGeluToFp8Entry(a, b, scale_a, scale_b, bias, scale_out, fast_accum,
                                /*allow_fused=*/true);
}

LinearGeluResult ScaledMmGeluAuxToFp8(const at::Tensor& a, const at::Tensor& b,
                                      const at::Tensor& scale_a, const at::Tensor& scale_b,
                                      const at::Tensor& bias, const at::Tensor& scale_out,
                                      const at::Tensor& amax_out, bool fast_accum) {
  return ScaledMmGeluAuxToFp8Entry(a, b, scale_a, scale_b, bias, scale_out, amax_out, fast_accum,
                                   /*allow_fused=*/true);
}

at::Tensor ScaledMmAccumulate(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& accumulate,
                              bool fast_accum) {
  return ScaledMmAccumulateEntry(a, b, scale_a, scale_b, accumulate, fast_accum,
                                 /*allow_fused=*/true);
}

bool LastGemmEpilogueWasFused() { return g_last_fused; }

namespace reference {

at::Tensor LinearBiasGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearBiasGeluEntry(x, weight, bias, /*allow_fused=*/false);
}

LinearGeluResult LinearGelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearGeluEntry(x, weight, bias, /*allow_fused=*/false);
}

at::Tensor LinearBias(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearBiasEntry(x, weight, bias, /*allow_fused=*/false);
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& weight) {
  return LinearEntry(x, weight, /*allow_fused=*/false);
}

at::Tensor LinearInputGrad(const at::Tensor& dy, const at::Tensor& weight,
                           const at::Tensor& accumulate) {
  return LinearInputGradEntry(dy, weight, accumulate, /*allow_fused=*/false);
}

at::Tensor LinearWeightGrad(const at::Tensor& dy, const at::Tensor& x) {
  return LinearWeightGradEntry(dy, x, /*allow_fused=*/false);
}

at::Tensor ScaledMm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                    const at::Tensor& scale_b, const at::Tensor& bias, at::ScalarType out_dtype,
                    bool fast_accum) {
  return ScaledMmEntry(a, b, scale_a, scale_b, bias, out_dtype, fast_accum, TokenAxis::kNone,
                       /*allow_fused=*/false);
}

LinearGeluResult ScaledMmGelu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& bias,
                              at::ScalarType out_dtype, bool fast_accum) {
  return ScaledMmGeluEntry(a, b, scale_a, scale_b, bias, out_dtype, fast_accum,
                           /*allow_fused=*/false);
}

at::Tensor ScaledMmGeluToFp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const at::Tensor& bias,
                             const at::Tensor& scale_out, bool fast_accum) {
  return ScaledMmGeluToFp8Entry(a, b, scale_a, scale_b, bias, scale_out, fast_accum,
                                /*allow_fused=*/false);
}

LinearGeluResult ScaledMmGeluAuxToFp8(const at::Tensor& a, const at::Tensor& b,
                                      const at::Tensor& scale_a, const at::Tensor& scale_b,
                                      const at::Tensor& bias, const at::Tensor& scale_out,
                                      const at::Tensor& amax_out, bool fast_accum) {
  return ScaledMmGeluAuxToFp8Entry(a, b, scale_a, scale_b, bias, scale_out, amax_out, fast_accum,
                                   /*allow_fused=*/false);
}

at::Tensor ScaledMmAccumulate(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                              const at::Tensor& scale_b, const at::Tensor& accumulate,
                              bool fast_accum) {
  return ScaledMmAccumulateEntry(a, b, scale_a, scale_b, accumulate, fast_accum,
                                 /*allow_fused=*/false);
}

}  // namespace reference
}  // namespace padless::cuda
