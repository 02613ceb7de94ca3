// The timing loop of the cuda/ Google Benchmark suites: each iteration's GPU time from a pair of
// CUDA events on the current stream (manual time, so register the benchmark with UseManualTime()),
// after a few untimed calls that load kernels and fill the caching allocator.
#ifndef PADLESS_BENCH_CUDA_GPU_EVENT_TIMER_H_
#define PADLESS_BENCH_CUDA_GPU_EVENT_TIMER_H_

#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <functional>

namespace padless::bench {

inline void TimeIterationsWithCudaEvents(benchmark::State& state, const std::function<void()>& fn,
                                         int warmup_calls = 3) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < warmup_calls; ++i) fn();
  for (auto _ : state) {
    cudaEventRecord(start, stream);
    fn();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace padless::bench

#endif  // PADLESS_BENCH_CUDA_GPU_EVENT_TIMER_H_
