// QuantizeInferenceWeights (fused_layer.h): each layer's GEMM weights in E4M3, and the fixed
// scales of its FFN (Fp8StaticFfn).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fp8_gemm.h"
#include "layer_gemms.h"
#include "padless/cuda/kernels/fp8_static.h"
#include "padless/models/fused_layer.h"

namespace padless::models {
namespace {

constexpr float kE4M3Largest = 448.f;
// FP8 rounds h to within 1/16 of each value; the activation's bound allows twice that.
constexpr double kInputRounding = 1.0 + 1.0 / 8.0;
// The most negative GELU value is about -0.17 (ReLU's 0).
constexpr float kActivationFloor = 0.2f;

// Fp8StaticFfn's bounds for layer weights `w` with its FFN-in weight quantized as `w_in`; unset
// when a bound is zero or not finite (the FFN then quantizes per token).
Fp8StaticFfn StaticFfnScales(at::TensorList w, const cuda::Fp8Rows& w_in) {
  using internal::kFfnInGemm;
  using internal::kGemmWeight;
  const at::Tensor gamma = w[kAttnNormWeight].to(at::kFloat);
  const at::Tensor beta = w[kAttnNormBias].to(at::kFloat);
  const at::Tensor b_in = w[kGemmWeight[kFfnInGemm] + 1].to(at::kFloat);
  const double root_h = std::sqrt(static_cast<double>(gamma.numel()));
  const at::Tensor wq = w_in.values.to(at::kFloat) * w_in.scale_inv;  // [F, H] as the GEMM sees it
  const float input_bound = (gamma.abs() * root_h + beta.abs()).max().item<float>();
  const at::Tensor pre_bound =
      ((wq * gamma).norm(2, {1}) * root_h + wq.abs().mv(beta.abs())) * kInputRounding + b_in.abs();
  const float activation_bound = std::max(pre_bound.max().item<float>(), kActivationFloor);
  if (!(input_bound > 0.f) || !std::isfinite(input_bound) || !std::isfinite(activation_bound)) {
    return {};
  }
  return {input_bound / kE4M3Largest,
          cuda::MakeFp8FixedScale(activation_bound / kE4M3Largest, w_in.values.device())};
}

}  // namespace

std::vector<Fp8LayerWeights> QuantizeInferenceWeights(const std::vector<at::TensorList>& layers) {
  using internal::kFfnInGemm;
  using internal::kFfnOutGemm;
  const at::NoGradGuard no_grad;
  std::vector<Fp8LayerWeights> out;
  out.reserve(layers.size());
  for (at::TensorList w : layers) {
    Fp8LayerWeights& layer = out.emplace_back();
    for (int g = 0; g < kFusedLayerGemms; ++g) {
      const at::Tensor& weight = w[internal::kGemmWeight[g]];
      if (!internal::Fp8GemmFits(weight)) continue;  // stays in the compute dtype
      layer.gemms[g] = cuda::Fp8QuantizeRows(weight, cuda::RowActivation::kNone, /*pad_rows_to=*/1);
    }
    if (!layer.gemms[kFfnInGemm].values.defined() || !layer.gemms[kFfnOutGemm].values.defined()) {
      continue;
    }
    const cuda::Fp8Rows w_in = cuda::Fp8QuantizeTensor(w[internal::kGemmWeight[kFfnInGemm]]);
    layer.ffn = StaticFfnScales(w, w_in);
    if (layer.ffn.Set()) layer.gemms[kFfnInGemm] = w_in;
  }
  return out;
}

}  // namespace padless::models
