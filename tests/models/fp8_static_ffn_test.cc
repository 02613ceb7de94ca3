// The FFN's fixed FP8 scales (fused_layer.h's Fp8StaticFfn, set by QuantizeInferenceWeights):
// which GEMM weights get one scale, and the bounds themselves. A bound must hold for every input,
// so the tests aim inputs at it: a residual stream with one spike (the largest |xhat_k| a
// LayerNorm can produce) and, for the activation, inputs along W_in[j] * gamma (the direction that
// maximises |(W_in h)_j|). Neither bound may be exceeded, and each must be reached to within the
// stated margins, so a bound that is far too loose (coarsening every value) fails as well.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "padless/models/encoder_config.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fused_layer.h"

namespace padless::models {
namespace {

constexpr int kFfnIn = 2;  // GEMM order: QKV, output projection, FFN in, FFN out

EncoderLayer RandomLayer(int64_t hidden, int64_t ffn, uint64_t seed) {
  at::manual_seed(seed);
  EncoderLayer layer(EncoderConfig().hidden(hidden).heads(4).ffn(ffn), 0);
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> w = layer->weights();
  for (at::Tensor& t : w) t.add_(at::randn_like(t) * 0.3);
  // LayerNorm scales far from 1, some large, as trained models have.
  w[kAttnNormWeight].copy_(at::randn_like(w[kAttnNormWeight]).abs() * 2 + 0.1);
  w[kAttnNormBias].normal_(0, 0.5);
  return layer;
}

TEST(Fp8StaticFfnTest, TheFfnInWeightGetsOneScaleAndTheOthersOnePerChannel) {
  EncoderLayer layer = RandomLayer(64, 256, 31);
  const std::vector<Fp8LayerWeights> fp8 = QuantizeInferenceWeights({layer->weights()});
  ASSERT_EQ(fp8.size(), 1u);
  ASSERT_TRUE(fp8[0].ffn.Set());
  for (int g = 0; g < kFusedLayerGemms; ++g) {
    const at::Tensor s = fp8[0].gemms[g].scale_inv;
    ASSERT_TRUE(s.defined()) << g;
    const bool one_scale = at::equal(s, s[0].expand_as(s));
    EXPECT_EQ(one_scale, g == kFfnIn) << g;
  }
  // A layer whose sides are not multiples of 16 keeps every GEMM in the compute dtype.
  EncoderLayer odd = RandomLayer(40, 72, 32);
  const std::vector<Fp8LayerWeights> none = QuantizeInferenceWeights({odd->weights()});
  EXPECT_FALSE(none[0].ffn.Set());
}

TEST(Fp8StaticFfnTest, BoundsHoldAndAreReachedByTheWorstInputs) {
  const int64_t hidden = 64;
  EncoderLayer layer = RandomLayer(hidden, 256, 33);
  const std::vector<at::Tensor> w = layer->weights();
  const Fp8StaticFfn ffn = QuantizeInferenceWeights({w})[0].ffn;
  ASSERT_TRUE(ffn.Set());
  const float input_bound = ffn.input_scale_inv * 448.f;
  const float activation_bound = ffn.activation.scale_inv * 448.f;
  const at::Tensor gamma = w[kAttnNormWeight], beta = w[kAttnNormBias];
  const at::Tensor w_in = w[kFfnInWeight], b_in = w[kFfnInBias];

  // Residual streams: random rows, one spike per column, and for each FFN channel j the centred
  // direction of W_in[j] * gamma (the LayerNorm keeps a centred row's direction), both signs.
  at::manual_seed(34);
  const at::Tensor spikes = at::eye(hidden) * 100;
  const at::Tensor directions = w_in * gamma;
  const at::Tensor centred = directions - directions.mean(1, true);
  const at::Tensor x = at::cat({at::randn({500, hidden}) * 3, spikes, centred, -centred});
  const at::Tensor h = at::layer_norm(x, {hidden}, gamma, beta, 1e-12);
  const at::Tensor act = at::gelu(at::addmm(b_in, h, w_in.t()));

  const float h_max = h.abs().max().item<float>();
  const float act_max = act.abs().max().item<float>();
  EXPECT_LE(h_max, input_bound);
  EXPECT_LE(act_max, activation_bound);
  // A spike reaches |xhat_k| = sqrt(H - 1), against the bound's sqrt(H): within 1%, plus |beta|.
  EXPECT_GE(h_max, 0.95f * input_bound);
  // The aimed rows reach the bound to within the rounding margin (1 + 1/8), the centring, and
  // |W_in[j]| . |beta| against W_in[j] . beta.
  EXPECT_GE(act_max, 0.6f * activation_bound);
}

}  // namespace
}  // namespace padless::models
