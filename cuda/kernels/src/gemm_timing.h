// Timing cuBLASLt's candidate algorithms on the stream (gemm_tuning.h says when and why).
#ifndef PADLESS_CUDA_SRC_GEMM_TIMING_H_
#define PADLESS_CUDA_SRC_GEMM_TIMING_H_

#ifdef PADLESS_HAVE_CUDA_KERNELS
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace padless::cuda::internal {

// Whether `stream` is being captured into a CUDA graph (then nothing may sync it).
bool StreamIsCapturing(cudaStream_t stream);

// Each candidate's mean time in ms over kGemmTuningRuns launches after one untimed launch, in
// order: launch(i) enqueues candidate i on `stream` and returns false when it was rejected
// (nothing launched; its time is then -1). One host sync, at the end.
std::vector<double> TimeGemmCandidates(int count, const std::function<bool(int)>& launch,
                                       cudaStream_t stream);

}  // namespace padless::cuda::internal

#endif  // PADLESS_HAVE_CUDA_KERNELS
#endif  // PADLESS_CUDA_SRC_GEMM_TIMING_H_
