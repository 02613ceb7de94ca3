// GPU micro-benchmark of the FP8 cast with its amax (fp8_quantize.h) against the unfused ATen ops a
// naive FP8 path runs (reference::Fp8Quantize), in the same run and on the same inputs:
//   Fp8Quantize/rows            rows only         vs multiply, clamp, cast, pad, NaN-masked max
//   Fp8Quantize/rows_transposed rows + transpose  vs the same plus .t().contiguous()
// E4M3 with a device-side scale and amax, as the delayed-scaling recipe calls it.
// Shapes: T = 16384 tokens at BERT-base widths (C = 768, the activations; C = 3072, the FFN's),
// bf16; --smoke uses one tiny shape (proves the suite runs, measures nothing).
// Timing: CUDA events around each call (manual time). Counters: bytes_per_second of the useful
// traffic (one bf16 read, one or two fp8 writes; the unfused ops' extra passes are not counted, so
// both rates are for the same work), kernel = 1 when the kernel ran.
// usage: fp8_quantize_bench [--smoke] [google benchmark flags]; exits 0 with a message without a
// GPU.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gpu_bench_main.h"
#include "gpu_event_timer.h"
#include "padless/cuda/kernels/fp8_quantize.h"

namespace padless::cuda {
namespace {

struct Shape {
  const char* name;
  int64_t t, c;
};

struct Inputs {
  at::Tensor x;      // [T, C] bf16
  at::Tensor scale;  // fp32 0-dim on the device
  at::Tensor amax;   // fp32 [1] on the device
};

const Inputs& InputsFor(const Shape& s) {
  return bench::OncePerShape<Inputs>(s.name, [&] {
    at::manual_seed(9);
    const at::TensorOptions gpu(at::kCUDA);
    return Inputs{at::randn({s.t, s.c}, gpu).to(at::kBFloat16), at::full({}, 64.f, gpu),
                  at::zeros({1}, gpu)};
  });
}

using QuantizeFn = Fp8Quantized (*)(const at::Tensor&, const at::Tensor&, Fp8Format,
                                    const Fp8QuantizeOptions&, const at::Tensor&);

void Run(benchmark::State& state, const Shape& s, QuantizeFn fn, bool transposed) {
  const Inputs& in = InputsFor(s);
  const Fp8QuantizeOptions options{true, transposed, 16};
  bench::TimeIterationsWithCudaEvents(
      state,
      [&] { benchmark::DoNotOptimize(fn(in.x, in.scale, Fp8Format::kE4M3, options, in.amax)); });
  const double bytes = static_cast<double>(s.t) * s.c * (2 + (transposed ? 2 : 1));
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["kernel"] = LastFp8QuantizeRanKernel();
}

void BM_RowsKernel(benchmark::State& state, Shape s) { Run(state, s, Fp8Quantize, false); }
void BM_RowsUnfused(benchmark::State& state, Shape s) {
  Run(state, s, reference::Fp8Quantize, false);
}
void BM_BothKernel(benchmark::State& state, Shape s) { Run(state, s, Fp8Quantize, true); }
void BM_BothUnfused(benchmark::State& state, Shape s) {
  Run(state, s, reference::Fp8Quantize, true);
}

void RegisterAll(bool smoke) {
  std::vector<Shape> shapes = {{"T16384_C768", 16384, 768}, {"T16384_C3072", 16384, 3072}};
  if (smoke) shapes = {{"T512_C64", 512, 64}};
  using Fn = void (*)(benchmark::State&, Shape);
  const std::vector<std::pair<const char*, Fn>> benches = {
      {"Fp8Quantize/rows/kernel", BM_RowsKernel},
      {"Fp8Quantize/rows/unfused", BM_RowsUnfused},
      {"Fp8Quantize/rows_transposed/kernel", BM_BothKernel},
      {"Fp8Quantize/rows_transposed/unfused", BM_BothUnfused}};
  bench::RegisterForShapes(benches, shapes);
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  return padless::bench::RunGpuBenchmarks(argc, argv, "fp8_quantize_bench",
                                          padless::cuda::RegisterAll);
}
