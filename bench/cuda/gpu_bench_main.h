// The main() of the cuda/ Google Benchmark suites whose shapes have a --smoke variant: takes
// --smoke out of the arguments (one tiny shape: proves the suite runs, measures nothing), parses
// Google Benchmark's flags (exit 2 on an unknown one), exits 0 with a message on a machine without
// a GPU, then registers the suite's benchmarks and runs them. Also what the suites share around
// their shapes: each shape's inputs made once (OncePerShape), each benchmark registered once per
// shape (RegisterForShapes).
#ifndef PADLESS_BENCH_CUDA_GPU_BENCH_MAIN_H_
#define PADLESS_BENCH_CUDA_GPU_BENCH_MAIN_H_

#include <benchmark/benchmark.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "padless/cuda/kernels/kernel_support.h"

namespace padless::bench {

// What make() returns for the shape `name`, made on the first call and kept for the process: the
// benchmarks of one shape time the same inputs. One cache per call site (make's type).
template <typename T, typename Make>
const T& OncePerShape(const std::string& name, Make make) {
  static std::map<std::string, T> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, make()).first;
  return it->second;
}

// Registers each of `benches` once per shape as "<name>/<shape.name>", timed by the benchmark
// itself (CUDA events: UseManualTime) and reported in microseconds.
template <typename Shape>
void RegisterForShapes(
    const std::vector<std::pair<const char*, void (*)(benchmark::State&, Shape)>>& benches,
    const std::vector<Shape>& shapes) {
  for (const Shape& s : shapes) {
    for (const auto& [name, fn] : benches) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + s.name).c_str(), fn, s)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

inline int RunGpuBenchmarks(int argc, char** argv, const char* name,
                            void (*register_all)(bool smoke)) {
  bool smoke = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  if (!torch::cuda::is_available()) {
    std::printf("%s: no CUDA device; nothing to measure.\n", name);
    return 0;
  }
  if (!cuda::CudaKernelsBuilt()) {
    std::printf("%s: built without the CUDA kernels; fused = reference.\n", name);
  }
  register_all(smoke);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace padless::bench

#endif  // PADLESS_BENCH_CUDA_GPU_BENCH_MAIN_H_
