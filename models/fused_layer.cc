#include "padless/models/fused_layer.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <array>
#include <tuple>
#include <vector>

#include "layer_call.h"
#include "padless/models/autocast.h"
#include "rng_state.h"

namespace padless::models {

namespace {

using internal::CaptureRng;
using internal::RestoreRng;
using internal::RngState;

bool IsHalf(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// Every tensor a layer's backward may need, in the compute dtype (statistics in fp32). A forward
// fills all of them; what a FusedSaving mode does not keep is recomputed in backward.
struct Activations {
  at::Tensor x;                             // [T, H] layer input
  at::Tensor qkv;                           // [T, 3H]
  at::Tensor attended;                      // [T, heads, head_dim]
  at::Tensor lse, flash_rng, flash_unused;  // flash's softmax statistics and dropout seed
  at::Tensor mask1;                         // dropout mask after the output projection
  at::Tensor s1, mean1, rstd1;              // LayerNorm-1 input and statistics
  at::Tensor h;                             // LayerNorm-1 output = FFN input
  at::Tensor f1;                            // [T, F] activation input
  at::Tensor g;                             // [T, F] activation output
  at::Tensor mask2;                         // dropout mask after the FFN
  at::Tensor s2, mean2, rstd2;              // LayerNorm-2 input and statistics
};

std::vector<at::Tensor> CastWeights(at::TensorList w, at::ScalarType dtype) {
  std::vector<at::Tensor> out;
  out.reserve(w.size());
  for (const at::Tensor& t : w) out.push_back(t.to(dtype));
  return out;
}

at::Tensor Linear(const at::Tensor& x, const std::vector<at::Tensor>& w, int weight) {
  return at::addmm(w[weight + 1], x, w[weight].t());
}

// dropout(t) in training mode; *mask is left undefined when p == 0.
at::Tensor Dropout(const at::Tensor& t, double p, at::Tensor* mask) {
  if (p <= 0.0) return t;
  auto [out, m] = at::native_dropout(t, p, /*train=*/true);
  *mask = m;
  return out;
}

at::Tensor DropoutBackward(const at::Tensor& grad, const at::Tensor& mask, double p) {
  return mask.defined() ? at::native_dropout_backward(grad, mask, 1.0 / (1.0 - p)) : grad;
}

at::Tensor Activate(const at::Tensor& f, Activation a) {
  switch (a) {
    case Activation::kRelu:
      return at::relu(f);
    case Activation::kGeluTanh:
      return at::gelu(f, "tanh");
    case Activation::kGelu:
      break;
  }
  return at::gelu(f);
}

at::Tensor ActivationBackward(const at::Tensor& grad, const at::Tensor& f, Activation a) {
  switch (a) {
    case Activation::kRelu:
      return at::threshold_backward(grad, f, 0);
    case Activation::kGeluTanh:
      return at::gelu_backward(grad, f, "tanh");
    case Activation::kGelu:
      break;
  }
  return at::gelu_backward(grad, f);
}

void AttendForward(const std::vector<at::Tensor>& qkv, const AttentionContext& ctx,
                   double dropout_p, Activations* a) {
  if (ctx.backend == AttentionBackend::kVarlenFlash) {
    std::tie(a->attended, a->lse, a->flash_rng, a->flash_unused, std::ignore) =
        at::_flash_attention_forward(qkv[0], qkv[1], qkv[2], ctx.cu_seqlens, ctx.cu_seqlens,
                                     ctx.max_seqlen, ctx.max_seqlen, dropout_p,
                                     /*is_causal=*/false, /*return_debug_mask=*/false);
    return;
  }
  // The reference runs without dropout (FusedLayerSupported).
  a->attended = Attend(qkv[0], qkv[1], qkv[2], ctx, 0.0).view(qkv[0].sizes());
}

// d(q, k, v) as one [T, 3H] tensor.
at::Tensor AttendBackward(const at::Tensor& grad, const Activations& a, const AttentionContext& ctx,
                          const LayerSpec& spec) {
  const int64_t tokens = a.x.size(0);
  const int64_t head_dim = a.x.size(1) / spec.heads;
  std::vector<at::Tensor> qkv = a.qkv.view({tokens, 3, spec.heads, head_dim}).unbind(1);
  std::array<at::Tensor, 3> d;
  if (ctx.backend == AttentionBackend::kVarlenFlash) {
    std::tie(d[0], d[1], d[2]) = at::_flash_attention_backward(
        grad, qkv[0], qkv[1], qkv[2], a.attended, a.lse, ctx.cu_seqlens, ctx.cu_seqlens,
        ctx.max_seqlen, ctx.max_seqlen, spec.attention_dropout, /*is_causal=*/false, a.flash_rng,
        a.flash_unused);
  } else {
    at::AutoGradMode grad_on(true);
    std::vector<at::Tensor> in;
    for (const at::Tensor& t : qkv) in.push_back(t.detach().requires_grad_(true));
    at::Tensor out = Attend(in[0], in[1], in[2], ctx, 0.0).view(grad.sizes());
    std::vector<at::Tensor> g = torch::autograd::grad({out}, in, {grad});
    for (int i = 0; i < 3; ++i) d[i] = g[i];
  }
  return at::stack({d[0], d[1], d[2]}, 1).view({tokens, 3 * a.x.size(1)});
}

// The layer's forward from x. With `through_ffn_out` false it stops after the FFN activation
// (what a recompute needs) and only draws the second dropout mask, so that the RNG stream and the
// mask are those of the full forward.
Activations Forward(const at::Tensor& x, const std::vector<at::Tensor>& w, const LayerSpec& spec,
                    const AttentionContext& ctx, bool through_ffn_out, at::Tensor* y) {
  const int64_t tokens = x.size(0);
  const int64_t hidden = x.size(1);
  Activations a;
  a.x = x;
  a.qkv = Linear(x, w, kQkvWeight);
  AttendForward(a.qkv.view({tokens, 3, spec.heads, hidden / spec.heads}).unbind(1), ctx,
                spec.attention_dropout, &a);
  at::Tensor projected = Linear(a.attended.view({tokens, hidden}), w, kOutWeight);
  a.s1 = x + Dropout(projected, spec.dropout, &a.mask1);
  std::tie(a.h, a.mean1, a.rstd1) =
      at::native_layer_norm(a.s1, {hidden}, w[kAttnNormWeight], w[kAttnNormBias], spec.eps);
  a.f1 = Linear(a.h, w, kFfnInWeight);
  a.g = Activate(a.f1, spec.activation);
  if (!through_ffn_out) {
    Dropout(at::zeros_like(x), spec.dropout, &a.mask2);
    return a;
  }
  a.s2 = a.h + Dropout(Linear(a.g, w, kFfnOutWeight), spec.dropout, &a.mask2);
  std::tie(*y, a.mean2, a.rstd2) =
      at::native_layer_norm(a.s2, {hidden}, w[kFfnNormWeight], w[kFfnNormBias], spec.eps);
  return a;
}

// Gradient of a bias: the row sum, returned in fp32 for half grads (the engine casts it to the
// bias's dtype).
at::Tensor BiasGrad(const at::Tensor& grad) {
  return at::sum(grad, {0}, false, IsHalf(grad.scalar_type()) ? at::kFloat : grad.scalar_type());
}

class FusedLayer : public torch::autograd::Function<FusedLayer> {
 public:
  // Variables seen by autograd: x, then every tensor of `weights`. The rest is context.
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& x,
                            const at::TensorList& weights, const LayerSpec* spec,
                            const AttentionContext* ctx, int64_t saving) {
    const at::Device device = x.device();
    const at::ScalarType dtype = x.scalar_type();
    // The function computes in x's dtype on its own; autocast must not re-cast (LayerNorm would
    // run in fp32 and return fp32).
    AutocastGuard no_autocast(device.type(), dtype, /*enabled=*/false);
    const FusedSaving mode = static_cast<FusedSaving>(saving);
    if (mode != FusedSaving::kSaveAll) internal::SaveForwardRng(actx, CaptureRng(device));
    internal::SaveLayerCall(actx, *spec, *ctx);
    actx->saved_data["saving"] = saving;

    at::Tensor y;
    Activations a = Forward(x, CastWeights(weights, dtype), *spec, *ctx, true, &y);
    std::vector<at::Tensor> saved;
    if (mode == FusedSaving::kRecomputeAll) {
      saved = {x};
    } else if (mode == FusedSaving::kRecomputeToActivation) {
      saved = {x, a.s2, a.mean2, a.rstd2};
    } else {
      saved = {x,
               a.qkv,
               a.attended,
               a.lse,
               a.flash_rng,
               a.flash_unused,
               a.mask1,
               a.s1,
               a.mean1,
               a.rstd1,
               a.h,
               a.f1,
               spec->lean ? at::Tensor() : a.g,
               a.mask2,
               a.s2,
               a.mean2,
               a.rstd2};
    }
    actx->saved_data["num_activations"] = static_cast<int64_t>(saved.size());
    saved.insert(saved.end(), weights.begin(), weights.end());
    actx->save_for_backward(saved);
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* actx,
                                                 torch::autograd::variable_list grad_outputs) {
    // The hand-written backward is not itself differentiable: a create_graph backward would
    // record nothing through the saved activations and return silently wrong second derivatives.
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "the fused encoder layer has no double backward (create_graph=true); use "
                "ModelRuntime::fused_layers = false");
    const LayerSpec spec = internal::LoadLayerSpec(actx);
    const AttentionContext ctx = internal::LoadAttentionContext(actx);
    const torch::autograd::variable_list saved = actx->get_saved_variables();
    const size_t num_activations = actx->saved_data["num_activations"].toInt();
    const at::Tensor& x = saved[0];
    const at::Device device = x.device();
    const at::ScalarType dtype = x.scalar_type();
    // The engine runs backward with the autocast state of the thread that called backward();
    // under autocast, LayerNorm in the recompute would come back in fp32.
    AutocastGuard no_autocast(device.type(), dtype, /*enabled=*/false);
    const std::vector<at::Tensor> w =
        CastWeights(at::TensorList(saved).slice(num_activations, kNumLayerWeights), dtype);
    const int64_t tokens = x.size(0);
    const int64_t hidden = x.size(1);

    Activations a;
    const FusedSaving mode = static_cast<FusedSaving>(actx->saved_data["saving"].toInt());
    if (mode != FusedSaving::kSaveAll) {
      // Re-run the layer (or its part up to the FFN activation) on the forward's RNG stream
      // (same attention dropout and masks), then give the stream back to the rest of backward.
      const bool whole = mode == FusedSaving::kRecomputeAll;
      RngState stash = CaptureRng(device);
      RestoreRng(internal::LoadForwardRng(actx), device);
      at::Tensor y;
      a = Forward(x, w, spec, ctx, /*through_ffn_out=*/whole, &y);
      RestoreRng(stash, device);
      if (!whole) {
        a.s2 = saved[1];
        a.mean2 = saved[2];
        a.rstd2 = saved[3];
      }
    } else {
      a = {x,         saved[1],  saved[2],  saved[3],  saved[4],  saved[5],
           saved[6],  saved[7],  saved[8],  saved[9],  saved[10], saved[11],
           saved[12], saved[13], saved[14], saved[15], saved[16]};
      if (!a.g.defined()) a.g = Activate(a.f1, spec.activation);
    }

    auto need = [&](int weight) { return actx->needs_input_grad(1 + weight); };
    torch::autograd::variable_list result(1 + kNumLayerWeights + 3);
    auto set = [&](int weight, const at::Tensor& g) { result[1 + weight] = g; };
    const at::Tensor dy = grad_outputs[0].to(dtype).contiguous();

    // LayerNorm 2, dropout, FFN out.
    auto [ds2, dnorm2_w, dnorm2_b] = at::native_layer_norm_backward(
        dy, a.s2, {hidden}, a.mean2, a.rstd2, w[kFfnNormWeight], w[kFfnNormBias],
        {true, need(kFfnNormWeight), need(kFfnNormBias)});
    set(kFfnNormWeight, dnorm2_w);
    set(kFfnNormBias, dnorm2_b);
    const at::Tensor df2 = DropoutBackward(ds2, a.mask2, spec.dropout);
    if (need(kFfnOutWeight)) set(kFfnOutWeight, df2.t().mm(a.g));
    if (need(kFfnOutBias)) set(kFfnOutBias, BiasGrad(df2));
    a.g = at::Tensor();
    // Activation, FFN in; the residual's gradient joins through addmm.
    const at::Tensor df1 = ActivationBackward(df2.mm(w[kFfnOutWeight]), a.f1, spec.activation);
    if (need(kFfnInWeight)) set(kFfnInWeight, df1.t().mm(a.h));
    if (need(kFfnInBias)) set(kFfnInBias, BiasGrad(df1));
    const at::Tensor dh = at::addmm(ds2, df1, w[kFfnInWeight]);
    // LayerNorm 1, dropout, output projection.
    auto [ds1, dnorm1_w, dnorm1_b] = at::native_layer_norm_backward(
        dh, a.s1, {hidden}, a.mean1, a.rstd1, w[kAttnNormWeight], w[kAttnNormBias],
        {true, need(kAttnNormWeight), need(kAttnNormBias)});
    set(kAttnNormWeight, dnorm1_w);
    set(kAttnNormBias, dnorm1_b);
    const at::Tensor dproj = DropoutBackward(ds1, a.mask1, spec.dropout);
    if (need(kOutWeight)) set(kOutWeight, dproj.t().mm(a.attended.view({tokens, hidden})));
    if (need(kOutBias)) set(kOutBias, BiasGrad(dproj));
    // Attention, QKV; the residual's gradient joins through addmm.
    const at::Tensor dqkv =
        AttendBackward(dproj.mm(w[kOutWeight]).view(a.attended.sizes()), a, ctx, spec);
    if (need(kQkvWeight)) set(kQkvWeight, dqkv.t().mm(x));
    if (need(kQkvBias)) set(kQkvBias, BiasGrad(dqkv));
    if (actx->needs_input_grad(0)) result[0] = at::addmm(ds1, dqkv, w[kQkvWeight]);
    return result;
  }
};

}  // namespace

bool FusedLayerSupported(const at::Tensor& x, const LayerSpec& spec, const AttentionContext& ctx) {
  if (spec.pre_ln || x.dim() != 2) return false;
  switch (ctx.backend) {
    case AttentionBackend::kVarlenFlash:
      return x.is_cuda() && IsHalf(FusedComputeDtype(x));
    case AttentionBackend::kVarlenReference:
      return spec.attention_dropout == 0.0;
    case AttentionBackend::kAuto:
    case AttentionBackend::kDense:
      break;
  }
  return false;
}

at::ScalarType FusedComputeDtype(const at::Tensor& x) {
  const c10::DeviceType device = x.device().type();
  if (at::autocast::is_autocast_enabled(device)) return at::autocast::get_autocast_dtype(device);
  return x.scalar_type();
}

at::Tensor FusedEncoderLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx,
                                    FusedSaving saving) {
  TORCH_CHECK(x.scalar_type() == FusedComputeDtype(x),
              "FusedEncoderLayerForward: x must be in the compute dtype");
  return FusedLayer::apply(x, weights, &spec, &ctx, static_cast<int64_t>(saving));
}

}  // namespace padless::models
