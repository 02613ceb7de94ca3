// Google Benchmark of the embeddings' sum + LayerNorm (SumLayerNorm, models/embedding_norm.h)
// against the plain ops it replaces, forward and backward through autograd, in the same run:
// T = 16384 tokens, H = 768 and 1024, fp32 rows (the embedding tables' dtype).
//   plain: at::layer_norm(a + b) and its autograd backward (add, LayerNorm; LayerNorm's input and
//          gamma/beta backward kernels)
//   fused: one kernel forward, one backward plus a small reduction (cuda::DropoutResidualLayerNorm
//          without dropout)
// Timing: CUDA events around one call per iteration (manual time). Exits with a message without a
// GPU or the kernels.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "gpu_event_timer.h"
#include "padless/cuda/kernels/kernel_support.h"
#include "padless/models/embedding_norm.h"

namespace padless::models {
namespace {

constexpr int64_t kTokens = 16384;
constexpr double kEps = 1e-12;

struct Inputs {
  at::Tensor a, b, gamma, beta, d_out;
};

Inputs MakeInputs(int64_t hidden) {
  at::manual_seed(1);
  const auto opts = at::TensorOptions(c10::Device(c10::kCUDA, 0));
  Inputs in;
  in.a = at::randn({kTokens, hidden}, opts).set_requires_grad(true);
  in.b = at::randn({kTokens, hidden}, opts).set_requires_grad(true);
  in.gamma = (1.0 + 0.1 * at::randn({hidden}, opts)).set_requires_grad(true);
  in.beta = (0.1 * at::randn({hidden}, opts)).set_requires_grad(true);
  in.d_out = at::randn({kTokens, hidden}, opts);
  return in;
}

at::Tensor Forward(const Inputs& in, bool fused) {
  return fused ? SumLayerNorm(in.a, in.b, in.gamma, in.beta, kEps)
               : at::layer_norm(in.a + in.b, {in.a.size(1)}, in.gamma, in.beta, kEps);
}

void Bench(benchmark::State& state, bool fused, bool backward) {
  const Inputs in = MakeInputs(state.range(0));
  bench::TimeIterationsWithCudaEvents(state, [&] {
    if (!backward) {
      const at::NoGradGuard no_grad;
      benchmark::DoNotOptimize(Forward(in, fused));
      return;
    }
    // Forward and backward together, as a training step runs them.
    benchmark::DoNotOptimize(
        torch::autograd::grad({Forward(in, fused)}, {in.a, in.b, in.gamma, in.beta}, {in.d_out}));
  });
  state.counters["hidden"] = static_cast<double>(state.range(0));
}

void RegisterAll() {
  for (const bool backward : {false, true}) {
    for (const bool fused : {true, false}) {
      const std::string name = std::string("SumLayerNorm/") +
                               (backward ? "ForwardBackward/" : "Forward/") +
                               (fused ? "fused" : "plain");
      benchmark::RegisterBenchmark(
          name.c_str(), [fused, backward](benchmark::State& s) { Bench(s, fused, backward); })
          ->Arg(768)
          ->Arg(1024)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace padless::models

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (!torch::cuda::is_available()) {
    std::printf("embedding_norm_bench: no CUDA device; nothing to measure.\n");
    return 0;
  }
  if (!padless::cuda::CudaKernelsBuilt()) {
    std::printf("embedding_norm_bench: padless was built without its CUDA kernels.\n");
    return 0;
  }
  padless::models::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
