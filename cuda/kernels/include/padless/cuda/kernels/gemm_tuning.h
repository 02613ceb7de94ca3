// Choosing the cuBLASLt algorithm of the cached GEMMs (gemm_epilogue.h) by measuring it.
//
// cuBLASLt's heuristic ranks its algorithms with a model of the GPU, not a measurement, and its
// first choice is not always the fastest for the training step's shapes (bench/cuda/
// gemm_epilogue_bench's Tuned/Heuristic pairs measure by how much). So, with tuning on, the first
// call of a GEMM problem the algorithm cache has not seen (a new shape, or a new 1024-token bucket
// of T) asks the heuristic for its first kGemmTuningCandidates algorithms, times each on the call's
// own operands, and caches the one PickFastestAlgorithm keeps. Everything later in that bucket runs
// the cached choice with no extra host work.
//
// What tuning costs: once per problem, kGemmTuningCandidates x (1 + kGemmTuningRuns) extra GEMMs
// on the current stream and one host sync, i.e. a few milliseconds per shape in the first steps of
// a run. It is skipped while the stream is being captured into a CUDA graph (no sync is allowed
// there); the heuristic's first choice is cached then.
//
// Numerics: every candidate computes the same product with fp32 accumulation, but their summation
// orders differ, so two processes that time differently can pick different algorithms and differ
// in the last bits, as flash attention's atomic dq already makes GPU training do. Within a process
// a problem keeps its algorithm, so repeated calls (a recomputed forward) are bitwise the same. Set
// PADLESS_GEMM_TUNING=0 in the environment (or call SetGemmTuning(false)) for the heuristic's
// choice alone, which is fixed for a given cuBLASLt and GPU.
#ifndef PADLESS_CUDA_KERNELS_GEMM_TUNING_H_
#define PADLESS_CUDA_KERNELS_GEMM_TUNING_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace padless::cuda {

inline constexpr int kGemmTuningCandidates = 8;
inline constexpr int kGemmTuningRuns = 4;  // timed runs per candidate, after one untimed run

// Whether new problems are tuned: GemmTuningSetting(PADLESS_GEMM_TUNING) at the first call, until
// SetGemmTuning. The algorithm cache keys the setting, so choices made under one are never used
// under the other.
bool GemmTuningEnabled();
void SetGemmTuning(bool on);

// How PADLESS_GEMM_TUNING's value reads: unset (nullptr) or empty, "1", "true" or "on" turn
// tuning on; "0", "false" or "off" turn it off; anything else is an error (its message names the
// variable, the value and the accepted ones), which GemmTuningEnabled reports once on stderr
// before it keeps tuning on.
absl::StatusOr<bool> GemmTuningSetting(const char* value);

// The candidate to keep, given each candidate's mean time in the heuristic's order (a negative
// time: the candidate could not run). The heuristic's ranking breaks near-ties: a candidate
// replaces the best so far only when it is more than `margin` (a fraction) faster, so timing noise
// does not swap equally fast algorithms from run to run. Returns -1 when none could run.
int PickFastestAlgorithm(absl::Span<const double> times_ms, double margin = 0.03);

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_GEMM_TUNING_H_
