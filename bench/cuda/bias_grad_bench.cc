// GPU micro-benchmark of the q/k/v gradient stack with its fused bias-gradient sum (bias_grad.h)
// against the unfused ATen ops it replaces, in the same run and on the same inputs:
//   StackQkv   StackWithBiasGrad(dq, dk, dv)   vs at::stack + at::sum(fp32)
// (A tanh-GELU backward with the FFN-in bias sum in the same pass, once measured here, lost to
// at::gelu_backward + at::sum; see bias_grad.h.)
// Shapes: BERT-base (T=16384 tokens, H=768) and BERT-large widths (H=1024), bf16; --smoke uses one
// tiny shape (proves the suite runs, measures nothing).
// Timing: CUDA events around each call (manual time). Counters: bytes_per_second of the stack
// (three [T, H] reads, one [T, 3H] write; the unfused sum's extra read is not counted, so both
// rates are for the same useful work), kernel = 1 when the kernel ran.
// usage: bias_grad_bench [--smoke] [google benchmark flags]; exits 0 with a message without a GPU.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu_bench_main.h"
#include "gpu_event_timer.h"
#include "padless/cuda/kernels/bias_grad.h"

namespace padless::cuda {
namespace {

constexpr int kWarmup = 3;

struct Shape {
  const char* name;
  int64_t t, h;
};

struct Inputs {
  at::Tensor q, k, v;  // [T, H] each
};

const Inputs& InputsFor(const Shape& s) {
  return bench::OncePerShape<Inputs>(s.name, [&] {
    at::manual_seed(9);
    const auto randn = [&] {
      return at::randn({s.t, s.h}, at::TensorOptions(at::kCUDA)).to(at::kBFloat16);
    };
    return Inputs{randn(), randn(), randn()};
  });
}

void TimeOnGpu(benchmark::State& state, const std::function<void()>& fn, const Shape& s) {
  bench::TimeIterationsWithCudaEvents(state, fn, kWarmup);
  const double bytes = 6.0 * s.t * s.h * 2;
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_StackFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(StackWithBiasGrad(in.q, in.k, in.v, true)); }, s);
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
      s);
}

void RegisterAll(bool smoke) {
  std::vector<Shape> shapes = {{"T16384_H768", 16384, 768}, {"T16384_H1024", 16384, 1024}};
  if (smoke) shapes = {{"T512_H64", 512, 64}};
  using Fn = void (*)(benchmark::State&, Shape);
  const std::vector<std::pair<const char*, Fn>> benches = {{"StackQkv/fused", BM_StackFused},
                                                           {"StackQkv/unfused", BM_StackUnfused}};
  bench::RegisterForShapes(benches, shapes);
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  return padless::bench::RunGpuBenchmarks(argc, argv, "bias_grad_bench",
                                          padless::cuda::RegisterAll);
}
