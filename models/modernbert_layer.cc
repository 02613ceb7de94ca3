#include "modernbert_layer.h"

#include <ATen/ATen.h>

#include <cmath>

#include "layer_gemms.h"
#include "padless/models/rotary.h"
#include "windowed_attention.h"

namespace padless::models::internal {

namespace {

// LayerNorm with the weight at `weight` (undefined: an identity, layer 0's attention norm) and
// its bias, if any, right after it.
at::Tensor Norm(const at::Tensor& t, at::TensorList w, int weight, const LayerSpec& spec) {
  if (!w[weight].defined()) return t;
  return at::layer_norm(t, {t.size(-1)}, w[weight], w[weight + 1], spec.eps);
}

at::Tensor Stream(const at::Tensor& t, const LayerSpec& spec) {
  return spec.lean ? ToResidualStream(t) : t;
}

// GEMM g of the layer: x @ W^T + b, with int8 weights when given.
at::Tensor Gemm(const at::Tensor& x, at::TensorList w, LayerGemm g, const Int8LayerWeights* int8) {
  if (int8 != nullptr) return (*int8)[g]->Apply(x);
  return at::linear(x, w[kGemmWeight[g]], w[kGemmWeight[g] + 1]);
}

}  // namespace

at::Tensor ModernBertAttentionBlock(const at::Tensor& x, at::TensorList w, const LayerSpec& spec,
                                    const AttentionContext& ctx, const Int8LayerWeights* int8) {
  const int64_t heads = w[kQkvWeight].size(0) / (3 * spec.head_dim);
  const RotaryTable& table = spec.window >= 0 ? ctx.rotary_local : ctx.rotary_global;
  TORCH_CHECK(table.defined(), "ModernBERT layer: the attention context has no rotary table");
  const at::Tensor qkv = Gemm(Norm(x, w, kAttnNormWeight, spec), w, kQkvGemm, int8);
  at::Tensor attended;
  if (ctx.varlen()) {
    // [T, 3H] -> three [T, heads, head_dim].
    const auto parts = qkv.view({x.size(0), 3, heads, spec.head_dim}).unbind(1);
    attended = AttendWindowed(ApplyRotary(parts[0], table), ApplyRotary(parts[1], table), parts[2],
                              ctx, spec.window, spec.attention_dropout);
  } else {
    // [B, L, 3H] -> three [B, L, heads, head_dim], rotated, then [B, heads, L, head_dim].
    const auto parts = qkv.view({x.size(0), x.size(1), 3, heads, spec.head_dim}).unbind(2);
    attended = AttendWindowed(ApplyRotary(parts[0], table).transpose(1, 2),
                              ApplyRotary(parts[1], table).transpose(1, 2),
                              parts[2].transpose(1, 2), ctx, spec.window, spec.attention_dropout);
  }
  // transformers' out_drop uses attention_dropout too.
  const at::Tensor a = at::dropout(Gemm(attended, w, kOutGemm, int8), spec.attention_dropout,
                                   spec.attention_dropout > 0);
  return Stream(ResidualAdd(x, a), spec);
}

at::Tensor ModernBertFfnBlock(const at::Tensor& h, at::TensorList w, const LayerSpec& spec,
                              const Int8LayerWeights* int8) {
  const at::Tensor in = Gemm(Norm(h, w, kFfnNormWeight, spec), w, kFfnInGemm, int8);
  const auto value_gate = in.chunk(2, -1);
  at::Tensor f = Activate(value_gate[0], spec.activation) * value_gate[1];
  f = at::dropout(f, spec.dropout, spec.dropout > 0);
  return Stream(ResidualAdd(h, Gemm(f, w, kFfnOutGemm, int8)), spec);
}

std::vector<NamedInit> ModernBertLayerInit(const EncoderConfig& c, int64_t index) {
  const int64_t h = c.hidden();
  const int64_t a = c.heads_in_layer(index) * c.head_dim();
  const int64_t f = c.ffn_in_layer(index);
  const double out_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers()));
  const auto normal = [](std::vector<int64_t> shape, double std) { return at::randn(shape) * std; };
  const auto maybe = [](bool present, std::vector<int64_t> shape, double fill) {
    return present ? at::full(shape, fill) : at::Tensor();
  };
  const bool attn_norm = index > 0;
  return {
      {"attention_qkv_weight", normal({3 * a, h}, 0.02)},
      {"attention_qkv_bias", maybe(c.attention_bias(), {3 * a}, 0.0)},
      {"attention_out_weight", normal({h, a}, out_std)},
      {"attention_out_bias", maybe(c.attention_bias(), {h}, 0.0)},
      {"attention_norm_weight", maybe(attn_norm, {h}, 1.0)},
      {"attention_norm_bias", maybe(attn_norm && c.norm_bias(), {h}, 0.0)},
      {"ffn_in_weight", normal({2 * f, h}, 0.02)},
      {"ffn_in_bias", maybe(c.mlp_bias(), {2 * f}, 0.0)},
      {"ffn_out_weight", normal({h, f}, out_std)},
      {"ffn_out_bias", maybe(c.mlp_bias(), {h}, 0.0)},
      {"ffn_norm_weight", at::ones({h})},
      {"ffn_norm_bias", maybe(c.norm_bias(), {h}, 0.0)},
  };
}

}  // namespace padless::models::internal
