// GPU micro-benchmark of the gradient passes with fused bias-gradient sums (bias_grad.h) against
// the unfused ATen ops they replace, in the same run and on the same inputs:
//   GeluBackward   GeluTanhBackwardWithBiasGrad(dy, pre)   vs at::gelu_backward(tanh) + at::sum
//   StackQkv       StackWithBiasGrad(dq, dk, dv)           vs at::stack + at::sum
// Shapes: BERT-base (T=16384 tokens, H=768, F=3072) and BERT-large widths (H=1024, F=4096), bf16;
// --smoke uses one tiny shape (proves the suite runs, measures nothing).
// Timing: CUDA events around each call (manual time). Counters: bytes_per_second of the gradient
// pass (reads and writes of the [T, N] tensors; the bias gradient's extra read in the unfused ops
// is not counted, so the unfused rate is what it delivers for the same useful work), kernel = 1
// when the kernel ran.
// usage: bias_grad_bench [--smoke] [google benchmark flags]; exits 0 with a message without a GPU.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpu_event_timer.h"
#include "padless/cuda/kernels/bias_grad.h"
#include "padless/cuda/kernels/kernel_support.h"

namespace padless::cuda {
namespace {

bool g_smoke = false;
constexpr int kWarmup = 3;

struct Shape {
  const char* name;
  int64_t t, h, f;
};

struct Inputs {
  at::Tensor dy, pre;  // [T, F]
  at::Tensor q, k, v;  // [T, H]
};

const Inputs& InputsFor(const Shape& s) {
  static std::map<std::string, Inputs> cache;
  auto it = cache.find(s.name);
  if (it != cache.end()) return it->second;
  at::manual_seed(9);
  const auto randn = [&](int64_t cols) {
    return at::randn({s.t, cols}, at::TensorOptions(at::kCUDA)).to(at::kBFloat16);
  };
  Inputs in{randn(s.f), randn(s.f), randn(s.h), randn(s.h), randn(s.h)};
  return cache.emplace(s.name, std::move(in)).first->second;
}

void TimeOnGpu(benchmark::State& state, const std::function<void()>& fn, double bytes) {
  bench::TimeIterationsWithCudaEvents(state, fn, kWarmup);
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// Two [T, F] reads and one write; three [T, H] reads and one [T, 3H] write.
double GeluBytes(const Shape& s) { return 3.0 * s.t * s.f * 2; }
double StackBytes(const Shape& s) { return 6.0 * s.t * s.h * 2; }

void BM_GeluFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(GeluTanhBackwardWithBiasGrad(in.dy, in.pre, true)); },
      GeluBytes(s));
  state.counters["kernel"] = LastBiasGradRanKernel();
}

void BM_GeluUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state,
      [&] {
        const at::Tensor d = at::gelu_backward(in.dy, in.pre, "tanh");
        benchmark::DoNotOptimize(at::sum(d, {0}, false, at::kFloat));
      },
      GeluBytes(s));
}

void BM_StackFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(StackWithBiasGrad(in.q, in.k, in.v, true)); },
      StackBytes(s));
  state.counters["kernel"] = LastBiasGradRanKernel();
}

void BM_StackUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state,
      [&] {
        const at::Tensor d = at::stack({in.q, in.k, in.v}, 1).view({s.t, 3 * s.h});
        benchmark::DoNotOptimize(at::sum(d, {0}, false, at::kFloat));
      },
      StackBytes(s));
}

void RegisterAll() {
  std::vector<Shape> shapes = {{"T16384_H768_F3072", 16384, 768, 3072},
                               {"T16384_H1024_F4096", 16384, 1024, 4096}};
  if (g_smoke) shapes = {{"T512_H64_F256", 512, 64, 256}};
  using Fn = void (*)(benchmark::State&, Shape);
  const std::vector<std::pair<const char*, Fn>> benches = {{"GeluBackward/fused", BM_GeluFused},
                                                           {"GeluBackward/unfused", BM_GeluUnfused},
                                                           {"StackQkv/fused", BM_StackFused},
                                                           {"StackQkv/unfused", BM_StackUnfused}};
  for (const Shape& s : shapes) {
    for (const auto& [name, fn] : benches) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + s.name).c_str(), fn, s)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      padless::cuda::g_smoke = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  if (!torch::cuda::is_available()) {
    std::printf("bias_grad_bench: no CUDA device; nothing to measure.\n");
    return 0;
  }
  if (!padless::cuda::CudaKernelsBuilt()) {
    std::printf("bias_grad_bench: built without the CUDA kernels; fused = reference.\n");
  }
  padless::cuda::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
