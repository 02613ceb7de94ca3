// Running one cuBLASLt GEMM (a GemmSpec) with the heuristic's algorithm choice cached per problem,
// and the policy that decides how much workspace it may use. CUDA builds only, as cublaslt_api.h.
#ifndef PADLESS_CUDA_SRC_GEMM_ALGO_CACHE_H_
#define PADLESS_CUDA_SRC_GEMM_ALGO_CACHE_H_

#include "cublaslt_api.h"

namespace padless::cuda::internal {

// Runs the GEMM on the current stream. Returns false, having launched nothing, when cuBLASLt's
// heuristic has no algorithm for this configuration or rejects it (the caller falls back); every
// other cuBLASLt failure throws. A cached algorithm that cublasLtMatmul rejects for this exact
// problem (NOT_SUPPORTED / INVALID_VALUE: nothing launched) is dropped and the heuristic asked.
bool RunGemm(const GemmSpec& g);

}  // namespace padless::cuda::internal

#endif  // PADLESS_CUDA_SRC_GEMM_ALGO_CACHE_H_
