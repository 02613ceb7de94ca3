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
//   LayerFp8, LayerBf16  the twelve GEMMs of one encoder layer's training step (four forward,
//                   four input gradients, four weight gradients; QKV, output projection, FFN-in
//                   with its GELU, FFN-out), as the FP8 or bf16 layer calls them:
//                   /tuned: algorithms chosen by timing (gemm_tuning.h)
//                   vs /heuristic: cuBLASLt's first choice
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
#include "padless/cuda/kernels/gemm_tuning.h"

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

// One encoder layer's weights and activations for the Layer* pairs: bf16 and their FP8 forms.
struct LayerInputs {
  at::Tensor qkv, out, w1, w2;      // bf16 weights [3H, H], [H, H], [F, H], [H, F]
  at::Tensor b3h, bh, bf;           // bf16 biases [3H], [H], [F]
  at::Tensor x, act, g3h, gh, gf;   // bf16 [T, H], [T, F]; gradients [T, 3H], [T, H], [T, F]
  at::Tensor qkv8, out8, w18, w28;  // E4M3 weights
  at::Tensor qkv8_t, out8_t, w18_t, w28_t;  // their transposes (the input gradients' operands)
  at::Tensor x8, act8, x8_t, act8_t;        // E4M3 inputs [T, H], [T, F] and transposes
  at::Tensor g3h8, gh8, gf8;                // E5M2 gradients and their transposes
  at::Tensor g3h8_t, gh8_t, gf8_t;
  at::Tensor residual;  // bf16 [T, H]: QKV's input gradient accumulates into it
  at::Tensor scale, act_scale, amax;
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

const LayerInputs& LayerInputsFor(const Shape& s) {
  return bench::OncePerShape<LayerInputs>(std::string("layer ") + s.name, [&] {
    at::manual_seed(9);
    const auto randn = [&](std::vector<int64_t> shape, double scale) {
      return (at::randn(shape, at::TensorOptions(at::kCUDA)) * scale).to(at::kBFloat16);
    };
    const auto e4m3 = [](const at::Tensor& t) { return (t * 32).to(at::kFloat8_e4m3fn); };
    const auto e5m2 = [](const at::Tensor& t) { return t.to(at::kFloat8_e5m2); };
    const auto tr = [](const at::Tensor& t) { return t.t().contiguous(); };
    LayerInputs l;
    const int64_t h = s.h, f = s.f;
    l.qkv = randn({3 * h, h}, 1.0 / 32);
    l.out = randn({h, h}, 1.0 / 32);
    l.w1 = randn({f, h}, 1.0 / 32);
    l.w2 = randn({h, f}, 1.0 / 64);
    l.b3h = randn({3 * h}, 1.0);
    l.bh = randn({h}, 1.0);
    l.bf = randn({f}, 1.0);
    l.x = randn({s.t, h}, 1.0);
    l.act = randn({s.t, f}, 1.0);
    l.g3h = randn({s.t, 3 * h}, 1.0);
    l.gh = randn({s.t, h}, 1.0);
    l.gf = randn({s.t, f}, 1.0);
    l.residual = randn({s.t, h}, 1.0);
    l.qkv8 = e4m3(l.qkv), l.out8 = e4m3(l.out), l.w18 = e4m3(l.w1), l.w28 = e4m3(l.w2);
    l.qkv8_t = tr(l.qkv8), l.out8_t = tr(l.out8), l.w18_t = tr(l.w18), l.w28_t = tr(l.w28);
    l.x8 = l.x.to(at::kFloat8_e4m3fn), l.act8 = l.act.to(at::kFloat8_e4m3fn);
    l.x8_t = tr(l.x8), l.act8_t = tr(l.act8);
    l.g3h8 = e5m2(l.g3h), l.gh8 = e5m2(l.gh), l.gf8 = e5m2(l.gf);
    l.g3h8_t = tr(l.g3h8), l.gh8_t = tr(l.gh8), l.gf8_t = tr(l.gf8);
    const at::TensorOptions fp32(at::kCUDA);
    l.scale = at::full({}, 1.0f / 32, fp32);
    l.act_scale = at::full({}, 64.f, fp32);
    l.amax = at::zeros({1}, fp32);
    return l;
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

// 2 T x (3H H + H H + 2 H F) per pass, three passes (forward, input and weight gradients).
double LayerFlops(const Shape& s) { return 6.0 * s.t * (4.0 * s.h * s.h + 2.0 * s.h * s.f); }

// The FP8 layer's twelve GEMMs (fp8_gemm.cc): forward with bias and fast accumulation (FFN-in
// writing its GELU in E4M3), input gradients E5M2 x E4M3 in bf16 (QKV's into the residual
// gradient), weight gradients in fp32 with T as K.
void LayerFp8Gemms(const LayerInputs& l) {
  const at::Tensor& sc = l.scale;
  const auto forward = [&](const at::Tensor& x8, const at::Tensor& w8, const at::Tensor& b) {
    benchmark::DoNotOptimize(
        ScaledMm(x8, w8.t(), sc, sc, b, at::kBFloat16, /*fast_accum=*/true, TokenAxis::kM));
  };
  const auto input_grad = [&](const at::Tensor& g8, const at::Tensor& w8_t) {
    benchmark::DoNotOptimize(
        ScaledMm(g8, w8_t.t(), sc, sc, at::Tensor(), at::kBFloat16, false, TokenAxis::kM));
  };
  const auto weight_grad = [&](const at::Tensor& g8_t, const at::Tensor& x8_t) {
    benchmark::DoNotOptimize(
        ScaledMm(g8_t, x8_t.t(), sc, sc, at::Tensor(), at::kFloat, false, TokenAxis::kK));
  };
  forward(l.x8, l.qkv8, l.b3h);
  forward(l.x8, l.out8, l.bh);
  benchmark::DoNotOptimize(
      ScaledMmGeluAuxToFp8(l.x8, l.w18.t(), sc, sc, l.bf, l.act_scale, l.amax, true));
  forward(l.act8, l.w28, l.bh);
  input_grad(l.gh8, l.w28_t);
  input_grad(l.gf8, l.w18_t);
  input_grad(l.gh8, l.out8_t);
  at::Tensor residual = l.residual;
  benchmark::DoNotOptimize(ScaledMmAccumulate(l.g3h8, l.qkv8_t.t(), sc, sc, residual, false));
  weight_grad(l.gh8_t, l.act8_t);
  weight_grad(l.gf8_t, l.x8_t);
  weight_grad(l.gh8_t, l.x8_t);
  weight_grad(l.g3h8_t, l.x8_t);
}

// The bf16 layer's twelve GEMMs (gemm_epilogue.h), in the same order.
void LayerBf16Gemms(const LayerInputs& l) {
  benchmark::DoNotOptimize(LinearBias(l.x, l.qkv, l.b3h));
  benchmark::DoNotOptimize(LinearBias(l.x, l.out, l.bh));
  benchmark::DoNotOptimize(LinearGelu(l.x, l.w1, l.bf));
  benchmark::DoNotOptimize(LinearBias(l.act, l.w2, l.bh));
  benchmark::DoNotOptimize(LinearInputGrad(l.gh, l.w2));
  benchmark::DoNotOptimize(LinearInputGrad(l.gf, l.w1));
  benchmark::DoNotOptimize(LinearInputGrad(l.gh, l.out));
  at::Tensor residual = l.residual;
  benchmark::DoNotOptimize(LinearInputGrad(l.g3h, l.qkv, residual));
  benchmark::DoNotOptimize(LinearWeightGrad(l.gh, l.act));
  benchmark::DoNotOptimize(LinearWeightGrad(l.gf, l.x));
  benchmark::DoNotOptimize(LinearWeightGrad(l.gh, l.x));
  benchmark::DoNotOptimize(LinearWeightGrad(l.g3h, l.x));
}

// One layer's GEMMs with tuning on or off (the algorithm cache keeps the two settings' choices
// apart; the warm-up calls make them). The residual gradient drifts; the time does not depend on
// it.
void TimeLayer(benchmark::State& state, const Shape& s, bool tuned,
               void (*gemms)(const LayerInputs&)) {
  const LayerInputs& l = LayerInputsFor(s);
  const bool before = GemmTuningEnabled();
  SetGemmTuning(tuned);
  TimeOnGpu(
      state, [&] { gemms(l); }, LayerFlops(s));
  state.counters["fused"] = LastGemmEpilogueWasFused();
  SetGemmTuning(before);
}

void BM_LayerFp8Tuned(benchmark::State& state, Shape s) {
  TimeLayer(state, s, true, LayerFp8Gemms);
}
void BM_LayerFp8Heuristic(benchmark::State& state, Shape s) {
  TimeLayer(state, s, false, LayerFp8Gemms);
}
void BM_LayerBf16Tuned(benchmark::State& state, Shape s) {
  TimeLayer(state, s, true, LayerBf16Gemms);
}
void BM_LayerBf16Heuristic(benchmark::State& state, Shape s) {
  TimeLayer(state, s, false, LayerBf16Gemms);
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
      {"InputGradAccFp8/unfused", BM_InputGradAccFp8Unfused},
      {"LayerFp8/heuristic", BM_LayerFp8Heuristic},
      {"LayerFp8/tuned", BM_LayerFp8Tuned},
      {"LayerBf16/heuristic", BM_LayerBf16Heuristic},
      {"LayerBf16/tuned", BM_LayerBf16Tuned}};
  bench::RegisterForShapes(benches, shapes);
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  return padless::bench::RunGpuBenchmarks(argc, argv, "gemm_epilogue_bench",
                                          padless::cuda::RegisterAll);
}
