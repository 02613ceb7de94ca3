// GPU micro-benchmark of the gradient passes with fused bias-gradient sums (bias_grad.h) against
// the unfused ATen ops they replace, in the same run and on the same inputs:
//   GeluBackward   GeluTanhBackwardWithBiasGrad(dy, pre)   vs at::gelu_backward(tanh) + at::sum
//   StackQkv       StackWithBiasGrad(dq, dk, dv)           vs at::stack + at::sum
// (the sums in fp32), and the same two passes feeding an FP8 GEMM's backward (E5M2 rows and their
// transpose, as the fused layer's FP8 backward takes them):
//   GeluBackwardFp8/fused    the pass writes E5M2 rows itself, then Fp8Transpose of the bytes
//   GeluBackwardFp8/unfused  the pass writes bf16, then Fp8Quantize's cast-transpose of it
//   StackQkvFp8/...          likewise for the stack.
// Shapes: BERT-base (T=16384 tokens, H=768, F=3072) and BERT-large widths (H=1024, F=4096), bf16;
// --smoke uses one tiny shape (proves the suite runs, measures nothing).
// Timing: CUDA events around each call (manual time). Counters: bytes_per_second of the gradient
// pass (reads and writes of the [T, N] tensors; the unfused sum's extra read is not counted, so
// both rates are for the same useful work), kernel = 1 when the kernel ran.
// usage: bias_grad_bench [--smoke] [google benchmark flags]; exits 0 with a message without a GPU.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu_bench_main.h"
#include "gpu_event_timer.h"
#include "padless/cuda/kernels/bias_grad.h"
#include "padless/cuda/kernels/fp8_quantize.h"

namespace padless::cuda {
namespace {

constexpr int kWarmup = 3;

struct Shape {
  const char* name;
  int64_t t, h, f;
};

struct Inputs {
  at::Tensor dy, pre;  // [T, F]
  at::Tensor q, k, v;  // [T, H] each
};

const Inputs& InputsFor(const Shape& s) {
  return bench::OncePerShape<Inputs>(s.name, [&] {
    at::manual_seed(9);
    const auto randn = [&](int64_t cols) {
      return at::randn({s.t, cols}, at::TensorOptions(at::kCUDA)).to(at::kBFloat16);
    };
    return Inputs{randn(s.f), randn(s.f), randn(s.h), randn(s.h), randn(s.h)};
  });
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

// The gradient slot of an FP8 GEMM: its scale and amax.
struct Fp8Slot {
  at::Tensor scale = at::full({1}, 256.f, at::TensorOptions(at::kCUDA));
  at::Tensor amax = at::zeros({1}, at::TensorOptions(at::kCUDA));
  Fp8GradOutput Output() const { return {scale, amax, Fp8Format::kE5M2, 16}; }
};

// E5M2 rows and transpose from a pass's result: already FP8 (the transpose only), or 16-bit (the
// cast-transpose).
void ToFp8Operands(const GradWithBiasGrad& g, const Fp8Slot& slot) {
  if (g.grad.scalar_type() == at::kFloat8_e5m2) {
    benchmark::DoNotOptimize(Fp8Transpose(g.grad));
    return;
  }
  Fp8QuantizeOptions both;
  both.transposed = true;
  benchmark::DoNotOptimize(Fp8Quantize(g.grad, slot.scale, Fp8Format::kE5M2, both, slot.amax));
}

// Bytes of the FP8 path as built: the pass's reads, its 1-byte write, the transpose's read and
// write; the unfused path moves more for the same result.
double GeluFp8Bytes(const Shape& s) { return s.t * s.f * (2.0 * 2 + 3); }
double StackFp8Bytes(const Shape& s) { return s.t * 3.0 * s.h * (2 + 3); }

using Pass = std::function<GradWithBiasGrad(const Fp8GradOutput*)>;

// `pass` feeding an FP8 GEMM's backward: fused, it writes the E5M2 rows itself.
void BM_Fp8(benchmark::State& state, const Pass& pass, bool fused, double bytes) {
  const Fp8Slot slot;
  const Fp8GradOutput out = slot.Output();
  TimeOnGpu(
      state, [&] { ToFp8Operands(pass(fused ? &out : nullptr), slot); }, bytes);
  state.counters["kernel"] = LastBiasGradRanKernel();
}

void BM_GeluFp8(benchmark::State& state, Shape s, bool fused) {
  const Inputs& in = InputsFor(s);
  BM_Fp8(
      state,
      [&](const Fp8GradOutput* f) { return GeluTanhBackwardWithBiasGrad(in.dy, in.pre, true, f); },
      fused, GeluFp8Bytes(s));
}

void BM_StackFp8(benchmark::State& state, Shape s, bool fused) {
  const Inputs& in = InputsFor(s);
  BM_Fp8(
      state, [&](const Fp8GradOutput* f) { return StackWithBiasGrad(in.q, in.k, in.v, true, f); },
      fused, StackFp8Bytes(s));
}

void BM_GeluFp8Fused(benchmark::State& state, Shape s) { BM_GeluFp8(state, s, true); }
void BM_GeluFp8Unfused(benchmark::State& state, Shape s) { BM_GeluFp8(state, s, false); }
void BM_StackFp8Fused(benchmark::State& state, Shape s) { BM_StackFp8(state, s, true); }
void BM_StackFp8Unfused(benchmark::State& state, Shape s) { BM_StackFp8(state, s, false); }

void RegisterAll(bool smoke) {
  std::vector<Shape> shapes = {{"T16384_H768_F3072", 16384, 768, 3072},
                               {"T16384_H1024_F4096", 16384, 1024, 4096}};
  if (smoke) shapes = {{"T512_H64_F256", 512, 64, 256}};
  using Fn = void (*)(benchmark::State&, Shape);
  const std::vector<std::pair<const char*, Fn>> benches = {
      {"GeluBackward/fused", BM_GeluFused},       {"GeluBackward/unfused", BM_GeluUnfused},
      {"StackQkv/fused", BM_StackFused},          {"StackQkv/unfused", BM_StackUnfused},
      {"GeluBackwardFp8/fused", BM_GeluFp8Fused}, {"GeluBackwardFp8/unfused", BM_GeluFp8Unfused},
      {"StackQkvFp8/fused", BM_StackFp8Fused},    {"StackQkvFp8/unfused", BM_StackFp8Unfused}};
  bench::RegisterForShapes(benches, shapes);
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  return padless::bench::RunGpuBenchmarks(argc, argv, "bias_grad_bench",
                                          padless::cuda::RegisterAll);
}
