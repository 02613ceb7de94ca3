// cuBLASLt as the GEMMs of gemm_epilogue.h call it: the entry points taken from the libcublasLt
// that LibTorch has loaded, the status checks, one GEMM's description (GemmSpec) and the
// descriptors, layouts and preferences made from it. CUDA builds only: CMakeLists.txt lists
// cublaslt_api.cc with the kernels, and its users include this header under #ifdef
// PADLESS_HAVE_CUDA_KERNELS.
//
// cuBLAS(Lt) is column-major. A row-major [R, C] tensor with contiguous rows is, unchanged in
// memory, a column-major [C, R] matrix with leading dimension C. So a row-major product
//   Out[T, n] = P[T, k] @ Q[k, n]
// is computed as the column-major product Out^T[n, T] = Q^T[n, k] @ P^T[k, T]: cuBLAS's A is our
// right-hand factor, B our left-hand one, and D (m = n rows, T columns, ld = n) is Out as stored.
// Every GemmSpec spells out its A, B, D and transposes in that view.
#ifndef PADLESS_CUDA_SRC_CUBLASLT_API_H_
#define PADLESS_CUDA_SRC_CUBLASLT_API_H_

#include <c10/core/ScalarType.h>
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace padless::cuda::internal {

// Throws c10::Error "op: call failed: <cublasStatus_t name> (<value>)" unless `s` is a success.
void CheckLt(cublasStatus_t s, const char* op, const char* call);

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

// The process's entry points, loaded on the first call (thread-safe; a failure throws again on the
// next call).
const LtApi& Lt();

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

// A column-major rows x cols layout with ld = rows.
Layout MakeLayout(cudaDataType_t dtype, uint64_t rows, uint64_t cols, const char* op);

// The matmul descriptor of `g`: fp32 accumulation, its transposes, epilogue, bias, aux output and
// FP8 scales.
MatmulDesc MakeDesc(const GemmSpec& g);

// The largest power of two <= 256 dividing the address: the heuristic otherwise assumes 256-byte
// aligned operands and may pick a kernel that faults on less aligned ones.
uint32_t Alignment(const void* p);

// The heuristic's preference for `g`: the workspace it may use and its operands' alignments.
Preference MakePreference(const GemmSpec& g, size_t workspace_bytes);

inline uint64_t U64(int64_t v) { return static_cast<uint64_t>(v); }

// cuBLASLt's name of a bf16 or fp16 dtype.
inline cudaDataType_t CudaType(at::ScalarType t) {
  return t == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
}

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_CUBLASLT_API_H_
