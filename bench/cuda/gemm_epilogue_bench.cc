// GPU micro-benchmark of the encoder layer's cuBLASLt GEMMs (gemm_epilogue.h) against the ATen
// ops they replace, in the same run and on the same inputs (the FFN-in GEMM and its backward):
//   FfnIn           LinearGelu(x, W1, b1)            vs at::addmm + at::gelu(tanh)
//   InputGrad       LinearInputGrad(dy, W1)          vs at::mm(dy, W1)
//   InputGradAcc    LinearInputGrad(dy, W1, acc)     vs acc.addmm_(dy, W1)
//   WeightGrad      LinearWeightGrad(dy, x) (fp32)   vs at::mm(dy^T, x, fp32 out)
//   FfnInFp8        the FP8 training forward's FFN-in GEMM up to FFN-out's E4M3 input rows and
//                   their transpose, with the amax folded into a slot:
//                   ScaledMmGeluAuxToFp8 (GELU written in E4M3) + Fp8Transpose + max
//                   vs ScaledMmGelu (GELU in bf16) + Fp8Quantize (cast-transpose with the amax)
//   InputGradAccFp8 ScaledMmAccumulate(dy8, W1 e4m3, acc) (the add in the GEMM, T real rows)
//                   vs ScaledMm(dy8 padded to 16 rows, W1) + acc.add_
// (The backward epilogues DGELU_BGRAD and BGRADB, once measured here, lost or tied; see
// gemm_epilogue.h.)
// Shapes: BERT-base (T=16384 tokens, H=768, F=3072) and BERT-large widths (T=16384, H=1024,
// F=4096), bf16; --smoke uses one tiny shape (proves the suite runs, measures nothing).
// Timing: CUDA events around each call on the current stream (state.SetIterationTime, manual
// time), so the host cost of a call (descriptor setup; the cached cuBLASLt algorithm) counts when
// it delays the GPU. Counters: TFLOPS of the GEMM (2 T H F), fused = 1 when the cuBLASLt path ran.
// usage: gemm_epilogue_bench [--smoke] [google benchmark flags]; exits 0 with a message without a
// GPU.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu_bench_main.h"
#include "gpu_event_timer.h"
#include "padless/cuda/kernels/fp8_quantize.h"
#include "padless/cuda/kernels/gemm_epilogue.h"

namespace padless::cuda {
namespace {

constexpr int kWarmup = 3;

struct Shape {
  const char* name;
  int64_t t, h, f;
};

// The inputs of one shape, made once and shared by its benchmarks.
struct Inputs {
  at::Tensor x, w1, b1;
  at::Tensor dy;   // [T, F]: the gradient of the FFN-in output
  at::Tensor acc;  // [T, H]: a residual gradient to accumulate into
  // FfnInFp8: x and w1 in E4M3, their inverse scales, the activation's scale and amax slot.
  at::Tensor x8, w8, scale_inv, act_scale, act_amax;
  at::Tensor dy8;   // [T, F] E5M2: the FFN-in output's gradient
  at::Tensor w8_t;  // [H, F]: w8 transposed, so that w8_t.t() is column-major [F, H]
};

const Inputs& InputsFor(const Shape& s) {
  return bench::OncePerShape<Inputs>(s.name, [&] {
    at::manual_seed(7);
    const auto opts = at::TensorOptions(at::kCUDA).dtype(at::kBFloat16);
    const auto randn = [&](std::vector<int64_t> shape, double scale) {
      return (at::randn(shape, at::TensorOptions(at::kCUDA)) * scale).to(opts);
    };
    Inputs in;
    in.x = randn({s.t, s.h}, 1.0);
    in.w1 = randn({s.f, s.h}, 1.0 / 32);
    in.b1 = randn({s.f}, 1.0);
    in.dy = randn({s.t, s.f}, 1.0);
    in.acc = randn({s.t, s.h}, 1.0);
    in.x8 = in.x.to(at::kFloat8_e4m3fn);
    in.w8 = (in.w1 * 32).to(at::kFloat8_e4m3fn);
    const at::TensorOptions fp32(at::kCUDA);
    in.scale_inv = at::full({}, 1.0f / 32, fp32);
    in.act_scale = at::full({}, 64.f, fp32);
    in.act_amax = at::zeros({1}, fp32);
    in.dy8 = in.dy.to(at::kFloat8_e5m2);
    in.w8_t = in.w8.t().contiguous();
    return in;
  });
}

// Times each call of `fn` with CUDA events; `flops` per call feeds the TFLOPS counter.
void TimeOnGpu(benchmark::State& state, const std::function<void()>& fn, double flops) {
  bench::TimeIterationsWithCudaEvents(state, fn, kWarmup);
  // Rates divide by the manual (GPU) time; 1e12 per unit turns FLOP/s into TFLOPS.
  state.counters["TFLOPS"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

double GemmFlops(const Shape& s) { return 2.0 * s.t * s.h * s.f; }

void BM_FfnInFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(LinearGelu(in.x, in.w1, in.b1)); }, GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_FfnInUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state,
      [&] {
        const at::Tensor pre = at::addmm(in.b1, in.x, in.w1.t());
        benchmark::DoNotOptimize(at::gelu(pre, "tanh"));
      },
      GemmFlops(s));
}

void BM_InputGradFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(LinearInputGrad(in.dy, in.w1)); }, GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_InputGradUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(in.dy.mm(in.w1)); }, GemmFlops(s));
}

// Accumulates into the same buffer every call (its values drift; the time does not depend on them).
void BM_InputGradAccFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(LinearInputGrad(in.dy, in.w1, in.acc)); },
      GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_InputGradAccUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  at::Tensor acc = in.acc;
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(acc.addmm_(in.dy, in.w1)); }, GemmFlops(s));
}

void BM_WeightGradFused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(LinearWeightGrad(in.dy, in.x)); }, GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_WeightGradUnfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(at::mm(in.dy.t(), in.x, at::kFloat)); }, GemmFlops(s));
}

void BM_FfnInFp8Epilogue(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  at::Tensor slot = in.act_amax;
  const at::Tensor amax = at::empty_like(slot);
  TimeOnGpu(
      state,
      [&] {
        const LinearGeluResult r = ScaledMmGeluAuxToFp8(in.x8, in.w8.t(), in.scale_inv,
                                                        in.scale_inv, in.b1, in.act_scale, amax,
                                                        /*fast_accum=*/true);
        at::maximum_out(slot, slot, amax);
        benchmark::DoNotOptimize(Fp8Transpose(r.act));
      },
      GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_FfnInFp8Unfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  TimeOnGpu(
      state,
      [&] {
        const LinearGeluResult r = ScaledMmGelu(in.x8, in.w8.t(), in.scale_inv, in.scale_inv, in.b1,
                                                at::kBFloat16, /*fast_accum=*/true);
        benchmark::DoNotOptimize(Fp8Quantize(r.act, in.act_scale, Fp8Format::kE4M3,
                                             Fp8QuantizeOptions{true, true, 16}, in.act_amax));
      },
      GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

// The input gradient of the FFN-in GEMM in FP8 (E5M2 dy against the E4M3 weight's transpose),
// added into a residual gradient. The shapes' T is a multiple of 16, so both read the same rows.
void BM_InputGradAccFp8Fused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  at::Tensor acc = in.acc;
  TimeOnGpu(
      state,
      [&] {
        benchmark::DoNotOptimize(ScaledMmAccumulate(in.dy8, in.w8_t.t(), in.scale_inv, in.scale_inv,
                                                    acc, /*fast_accum=*/false));
      },
      GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void BM_InputGradAccFp8Unfused(benchmark::State& state, Shape s) {
  const Inputs& in = InputsFor(s);
  at::Tensor acc = in.acc;
  TimeOnGpu(
      state,
      [&] {
        benchmark::DoNotOptimize(acc.add_(ScaledMm(in.dy8, in.w8_t.t(), in.scale_inv, in.scale_inv,
                                                   at::Tensor(), at::kBFloat16,
                                                   /*fast_accum=*/false)));
      },
      GemmFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
}

void RegisterAll(bool smoke) {
  std::vector<Shape> shapes = {{"T16384_H768_F3072", 16384, 768, 3072},
                               {"T16384_H1024_F4096", 16384, 1024, 4096}};
  if (smoke) shapes = {{"T512_H64_F256", 512, 64, 256}};
  using Fn = void (*)(benchmark::State&, Shape);
  const std::vector<std::pair<const char*, Fn>> benches = {
      {"FfnIn/fused", BM_FfnInFused},
      {"FfnIn/unfused", BM_FfnInUnfused},
      {"InputGrad/fused", BM_InputGradFused},
      {"InputGrad/unfused", BM_InputGradUnfused},
      {"InputGradAcc/fused", BM_InputGradAccFused},
      {"InputGradAcc/unfused", BM_InputGradAccUnfused},
      {"WeightGrad/fused", BM_WeightGradFused},
      {"WeightGrad/unfused", BM_WeightGradUnfused},
      {"FfnInFp8/epilogue", BM_FfnInFp8Epilogue},
      {"FfnInFp8/unfused", BM_FfnInFp8Unfused},
      {"InputGradAccFp8/fused", BM_InputGradAccFp8Fused},
      {"InputGradAccFp8/unfused", BM_InputGradAccFp8Unfused}};
  bench::RegisterForShapes(benches, shapes);
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  return padless::bench::RunGpuBenchmarks(argc, argv, "gemm_epilogue_bench",
                                          padless::cuda::RegisterAll);
}
