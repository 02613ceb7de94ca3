// Google Benchmark of the fused bias + dropout + residual + LayerNorm (forward and backward)
// against the unfused ATen ops it replaces, in the same run: T = 16384 tokens, H = 768 and 1024,
// bf16 activations, p = 0.1, with a bias.
//   forward  unfused: at::native_dropout(input + bias), at::add(residual, .), at::native_layer_norm
//   backward unfused: at::native_layer_norm_backward, at::native_dropout_backward, at::sum (d_bias)
// and the backward feeding an FP8 GEMM (d_input as E5M2 rows and their transpose):
//   BackwardFp8/fused    the kernel writes d_input in E5M2 itself, then Fp8Transpose of the bytes
//   BackwardFp8/unfused  the kernel writes bf16 d_input, then Fp8Quantize's cast-transpose of it
// Timing: CUDA events around one call per iteration (manual time). bytes_per_second counts the
// same bytes for both variants, the minimum a fused pass must move (bf16 reads and writes of the
// [T, H] tensors plus the 1-byte mask), so it reads as effective HBM bandwidth. The fused forward
// takes fp32 gamma / beta (fp32 master parameters); the unfused one bf16, as at::native_layer_norm
// wants the input's dtype. Exits with a message when there is no GPU or no kernels.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "gpu_event_timer.h"
#include "padless/cuda/kernels/fp8_quantize.h"
#include "padless/cuda/kernels/kernel_support.h"
#include "padless/cuda/kernels/residual_layer_norm.h"

namespace padless::cuda {
namespace {

constexpr int64_t kTokens = 16384;
constexpr double kP = 0.1;
constexpr double kEps = 1e-5;
constexpr int kWarmup = 3;

struct Data {
  at::Tensor input, bias, residual, gamma, beta, gamma_f, beta_f, d_out;
};

Data MakeData(int64_t hidden) {
  at::manual_seed(1);
  const auto opts = at::TensorOptions(c10::Device(c10::kCUDA, 0));
  Data d;
  d.input = at::randn({kTokens, hidden}, opts).to(at::kBFloat16);
  d.residual = at::randn({kTokens, hidden}, opts).to(at::kBFloat16);
  d.d_out = at::randn({kTokens, hidden}, opts).to(at::kBFloat16);
  d.bias = at::randn({hidden}, opts).to(at::kBFloat16);
  d.gamma_f = 1.0 + 0.1 * at::randn({hidden}, opts);
  d.beta_f = 0.1 * at::randn({hidden}, opts);
  d.gamma = d.gamma_f.to(at::kBFloat16);
  d.beta = d.beta_f.to(at::kBFloat16);
  return d;
}

// bf16 reads and writes of the [T, H] tensors (2 bytes each) plus the bool mask (1 byte).
// Forward: reads input, residual; writes sum, out, mask. Backward: reads d_out, sum, mask; writes
// d_sum, d_input.
int64_t PassBytes(int64_t hidden) { return kTokens * hidden * (4 * 2 + 1); }

// Times `fn` with CUDA events on the current stream, one call per iteration.
void TimeOnGpu(benchmark::State& state, const std::function<void()>& fn, int64_t bytes) {
  bench::TimeIterationsWithCudaEvents(state, fn, kWarmup);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["hidden"] = static_cast<double>(state.range(0));
}

void ForwardFused(benchmark::State& state) {
  const Data d = MakeData(state.range(0));
  TimeOnGpu(
      state,
      [&] {
        benchmark::DoNotOptimize(
            DropoutResidualLayerNorm(d.input, d.bias, d.residual, d.gamma_f, d.beta_f, kP, kEps));
      },
      PassBytes(state.range(0)));
}

// The unfused forward, returning what its backward needs.
struct UnfusedForward {
  at::Tensor out, sum, mean, rstd, mask;
};
UnfusedForward RunUnfusedForward(const Data& d, int64_t hidden) {
  auto [dropped, mask] = at::native_dropout(d.input + d.bias, kP, /*train=*/true);
  const at::Tensor sum = at::add(d.residual, dropped);
  auto [out, mean, rstd] = at::native_layer_norm(sum, {hidden}, d.gamma, d.beta, kEps);
  return {out, sum, mean, rstd, mask};
}

void ForwardUnfused(benchmark::State& state) {
  const Data d = MakeData(state.range(0));
  TimeOnGpu(
      state, [&] { benchmark::DoNotOptimize(RunUnfusedForward(d, state.range(0))); },
      PassBytes(state.range(0)));
}

void BackwardFused(benchmark::State& state) {
  const Data d = MakeData(state.range(0));
  const DropoutResidualLayerNormResult f =
      DropoutResidualLayerNorm(d.input, d.bias, d.residual, d.gamma_f, d.beta_f, kP, kEps);
  TimeOnGpu(
      state,
      [&] {
        benchmark::DoNotOptimize(DropoutResidualLayerNormBackward(
            d.d_out, at::Tensor(), f.sum, f.mean, f.rstd, d.gamma_f, f.mask, kP,
            /*need_bias_grad=*/true));
      },
      PassBytes(state.range(0)));
}

void BackwardUnfused(benchmark::State& state) {
  const int64_t hidden = state.range(0);
  const Data d = MakeData(hidden);
  const UnfusedForward f = RunUnfusedForward(d, hidden);
  TimeOnGpu(
      state,
      [&] {
        auto [d_sum, d_gamma, d_beta] = at::native_layer_norm_backward(
            d.d_out, f.sum, {hidden}, f.mean, f.rstd, d.gamma, d.beta, {true, true, true});
        const at::Tensor d_input = at::native_dropout_backward(d_sum, f.mask, 1.0 / (1.0 - kP));
        benchmark::DoNotOptimize(at::sum(d_input, {0}, /*keepdim=*/false, at::kFloat));
        benchmark::DoNotOptimize(d_gamma);
        benchmark::DoNotOptimize(d_beta);
      },
      PassBytes(hidden));
}

// `fused`: d_input written in E5M2 by the backward kernel; else in bf16 and cast afterwards.
void BackwardFp8(benchmark::State& state, bool fused) {
  const Data d = MakeData(state.range(0));
  const DropoutResidualLayerNormResult f =
      DropoutResidualLayerNorm(d.input, d.bias, d.residual, d.gamma_f, d.beta_f, kP, kEps);
  const auto f32 = d.gamma_f.options();
  const Fp8GradOutput out{at::full({1}, 256.f, f32), at::zeros({1}, f32), Fp8Format::kE5M2, 16};
  TimeOnGpu(
      state,
      [&] {
        const DropoutResidualLayerNormGrads g =
            DropoutResidualLayerNormBackward(d.d_out, at::Tensor(), f.sum, f.mean, f.rstd,
                                             d.gamma_f, f.mask, kP, true, fused ? &out : nullptr);
        if (fused) {
          benchmark::DoNotOptimize(Fp8Transpose(g.d_input));
        } else {
          Fp8QuantizeOptions both;
          both.transposed = true;
          benchmark::DoNotOptimize(
              Fp8Quantize(g.d_input, out.scale, Fp8Format::kE5M2, both, out.amax));
        }
      },
      PassBytes(state.range(0)));
}

void BackwardFp8Fused(benchmark::State& state) { BackwardFp8(state, true); }
void BackwardFp8Unfused(benchmark::State& state) { BackwardFp8(state, false); }

void RegisterAll() {
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> benches[] = {
      {"Forward/fused", ForwardFused},         {"Forward/unfused", ForwardUnfused},
      {"Backward/fused", BackwardFused},       {"Backward/unfused", BackwardUnfused},
      {"BackwardFp8/fused", BackwardFp8Fused}, {"BackwardFp8/unfused", BackwardFp8Unfused}};
  for (const auto& [name, fn] : benches) {
    benchmark::RegisterBenchmark((std::string("ResidualLayerNorm/") + name).c_str(), fn)
        ->Arg(768)
        ->Arg(1024)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace padless::cuda

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  if (!torch::cuda::is_available()) {
    std::printf("residual_layer_norm_bench: no CUDA device; nothing to measure.\n");
    return 0;
  }
  if (!padless::cuda::CudaKernelsBuilt()) {
    std::printf("residual_layer_norm_bench: padless was built without its CUDA kernels.\n");
    return 0;
  }
  padless::cuda::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
