#include "gemm_algo_cache.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace padless::cuda::internal {
namespace {

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

// --- The workspace policy.

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

}  // namespace

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

}  // namespace padless::cuda::internal
