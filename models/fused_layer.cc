#include "padless/models/fused_layer.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <array>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "fused_attention.h"
#include "inference_gemms.h"
#include "layer_call.h"
#include "layer_gemms.h"
#include "padless/cuda/kernels/bias_grad.h"
#include "padless/cuda/kernels/cudnn_attention.h"
#include "padless/cuda/kernels/gemm_epilogue.h"
#include "padless/cuda/kernels/residual_layer_norm.h"
#include "padless/models/autocast.h"
#include "padless/models/rng_state.h"

namespace padless::models {

namespace {

using internal::Activate;
using internal::CaptureRng;
using internal::InferenceGemms;
using internal::kFfnInGemm;
using internal::kFfnOutGemm;
using internal::kOutGemm;
using internal::kQkvGemm;
using internal::LayerGemms;
using internal::OutputGrad;
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
  // [T_pad, F] E4M3: g as the FFN-out GEMM's FP8 input, which FfnIn writes instead of g when both
  // FFN GEMMs run in FP8. Last: kept activations are listed in the order above.
  at::Tensor g_fp8;
};

bool IsNormWeight(int weight) {
  return weight == kAttnNormWeight || weight == kAttnNormBias || weight == kFfnNormWeight ||
         weight == kFfnNormBias;
}

// The weights as the layer computes with them: matrices and biases in the compute dtype; the
// LayerNorm gains and biases as given (fp32 masters), which the LayerNorm kernels read directly.
std::vector<at::Tensor> ComputeWeights(at::TensorList w, at::ScalarType dtype) {
  std::vector<at::Tensor> out;
  out.reserve(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    out.push_back(IsNormWeight(static_cast<int>(i)) ? w[i] : w[i].to(dtype));
  }
  return out;
}

// Where a layer's copies start in its buffer: a multiple of 8 elements, so that every copy starts
// on a 16-byte boundary as the fused kernels and cuBLASLt's epilogues want (the packing must never
// send a layer to the unaligned fallbacks).
int64_t AlignedOffset(int64_t offset) { return (offset + 7) / 8 * 8; }

// The activation the layer computes. Erf-GELU models computing in bf16/fp16 on a GPU use the
// tanh form, which the FFN-in GEMM's cuBLASLt epilogue computes: the two differ by at most 4.7e-4
// (near |x| = 2.7, where a bf16 step is 0.016) and their slopes by at most 8.7e-4, far below the
// compute dtype's rounding.
Activation EffectiveActivation(const LayerSpec& spec, const at::Tensor& x) {
  if (spec.activation == Activation::kGelu && x.is_cuda() && IsHalf(x.scalar_type())) {
    return Activation::kGeluTanh;
  }
  return spec.activation;
}

// The pointer the kernels take for an optional FP8 output (a temporary's lives through the call).
const cuda::Fp8GradOutput* OrNull(const std::optional<cuda::Fp8GradOutput>& fp8) {
  return fp8 ? &*fp8 : nullptr;
}

// Gradient of a bias: the row sum, in fp32 for half grads (the parameters are fp32).
at::Tensor BiasGrad(const at::Tensor& grad) {
  return at::sum(grad, {0}, false, IsHalf(grad.scalar_type()) ? at::kFloat : grad.scalar_type());
}

// The activation's backward and, when asked, the FFN-in bias gradient (its row sum): one pass for
// tanh GELU (cuda::GeluTanhBackwardWithBiasGrad, which writes the gradient in FP8 when given
// `fp8`), else the ATen backward and a row sum (in the compute dtype whatever `fp8` says).
cuda::GradWithBiasGrad ActivationBackward(const at::Tensor& grad, const at::Tensor& f, Activation a,
                                          bool need_bias_grad, const cuda::Fp8GradOutput* fp8) {
  if (a == Activation::kGeluTanh) {
    return cuda::GeluTanhBackwardWithBiasGrad(grad, f, need_bias_grad, fp8);
  }
  cuda::GradWithBiasGrad r;
  r.grad = a == Activation::kRelu ? at::threshold_backward(grad, f, 0) : at::gelu_backward(grad, f);
  if (need_bias_grad) r.bias_grad = BiasGrad(r.grad);
  return r;
}

// FFN in and its activation: for tanh GELU one GEMM (in the compute dtype or FP8) with a GELU
// epilogue (gemm_epilogue.h), which in FP8 writes the activation as FFN-out's FP8 input (g_fp8);
// else the GEMM with its bias, then the activation.
void FfnIn(const LayerGemms& gemms, Activation activation, Activations* a) {
  if (activation == Activation::kGeluTanh) {
    LayerGemms::GeluOutput r = gemms.ForwardGelu(kFfnInGemm, kFfnOutGemm, a->h);
    a->f1 = std::move(r.pre);
    a->g = std::move(r.act);
    a->g_fp8 = std::move(r.act_fp8);
    return;
  }
  a->f1 = gemms.Forward(kFfnInGemm, a->h, /*bias=*/true);
  a->g = Activate(a->f1, activation);
}

void AttendForward(const std::vector<at::Tensor>& qkv, const AttentionContext& ctx,
                   double dropout_p, Activations* a) {
  internal::KeptAttention k = internal::FusedAttentionForward(qkv, ctx, dropout_p);
  std::tie(a->attended, a->lse, a->flash_rng, a->flash_unused) =
      std::tie(k.attended, k.lse, k.rng, k.unused);
}

// dq, dk, dv, each [T, H].
std::array<at::Tensor, 3> AttendBackward(const at::Tensor& grad, const Activations& a,
                                         const AttentionContext& ctx, const LayerSpec& spec) {
  const int64_t tokens = a.x.size(0);
  std::vector<at::Tensor> qkv = a.qkv.view({tokens, 3, -1, spec.head_dim}).unbind(1);
  std::array<at::Tensor, 3> d = internal::FusedAttentionBackward(
      grad, qkv, {a.attended, a.lse, a.flash_rng, a.flash_unused}, ctx, spec.attention_dropout);
  for (at::Tensor& t : d) t = t.reshape({tokens, -1});  // heads x head_dim: narrower when pruned
  return d;
}

// The layer's forward from x. With `through_ffn_out` false it stops after the FFN activation
// (what a selective recompute needs; the caller kept LayerNorm 2's input, statistics and mask).
Activations Forward(const at::Tensor& x, const std::vector<at::Tensor>& w, const LayerGemms& gemms,
                    const LayerSpec& spec, const AttentionContext& ctx, bool through_ffn_out,
                    at::Tensor* y) {
  const int64_t tokens = x.size(0);
  Activations a;
  a.x = x;
  a.qkv = gemms.Forward(kQkvGemm, x, /*bias=*/true);
  AttendForward(a.qkv.view({tokens, 3, -1, spec.head_dim}).unbind(1), ctx, spec.attention_dropout,
                &a);
  cuda::DropoutResidualLayerNormResult n1 = cuda::DropoutResidualLayerNorm(
      gemms.Forward(kOutGemm, a.attended.view({tokens, -1}), /*bias=*/false), w[kOutBias], x,
      w[kAttnNormWeight], w[kAttnNormBias], spec.dropout, spec.eps);
  a.h = std::move(n1.out);
  a.s1 = std::move(n1.sum);
  a.mean1 = std::move(n1.mean);
  a.rstd1 = std::move(n1.rstd);
  a.mask1 = std::move(n1.mask);
  FfnIn(gemms, EffectiveActivation(spec, x), &a);
  if (!through_ffn_out) return a;
  const at::Tensor ffn_out = a.g_fp8.defined() ? gemms.ForwardFromFp8(kFfnOutGemm, a.g_fp8, tokens)
                                               : gemms.Forward(kFfnOutGemm, a.g, /*bias=*/false);
  cuda::DropoutResidualLayerNormResult n2 = cuda::DropoutResidualLayerNorm(
      ffn_out, w[kFfnOutBias], a.h, w[kFfnNormWeight], w[kFfnNormBias], spec.dropout, spec.eps);
  *y = std::move(n2.out);
  a.s2 = std::move(n2.sum);
  a.mean2 = std::move(n2.mean);
  a.rstd2 = std::move(n2.rstd);
  a.mask2 = std::move(n2.mask);
  return a;
}

// Forward for inference: the same layer, keeping nothing for a backward, so fewer bytes move per
// layer: the FFN-in GEMM writes no pre-activation (GELU_BIAS epilogue instead of GELU_AUX_BIAS),
// and the two LayerNorms write neither their sums nor their statistics.
// LayerNorm(residual + input + bias) as the inference forward writes it, with the per-token FP8
// copy that the next GEMM reads when `fp8` (written by the LayerNorm kernel itself on a GPU).
// `fp8_scale_inv` > 0: that copy at this fixed scale (Fp8StaticFfn) instead of per token.
InferenceRows NormRows(const at::Tensor& input, const at::Tensor& bias, const at::Tensor& residual,
                       const at::Tensor& gamma, const at::Tensor& beta, double eps, bool fp8,
                       float fp8_scale_inv = 0.f) {
  InferenceRows r;
  if (!fp8) {
    r.x = cuda::ResidualLayerNorm(input, bias, residual, gamma, beta, eps);
    return r;
  }
  cuda::ResidualLayerNormFp8Result n =
      cuda::ResidualLayerNormWithFp8(input, bias, residual, gamma, beta, eps,
                                     /*pad_rows_to=*/16, fp8_scale_inv);
  r.x = std::move(n.out);
  r.fp8 = std::move(n.fp8);
  return r;
}

// The attention's output rows: every token's, or with `out_rows` defined the first tokens' alone.
at::Tensor InferAttention(const at::Tensor& qkv, const LayerSpec& spec, const AttentionContext& ctx,
                          const at::Tensor& out_rows) {
  const int64_t tokens = qkv.size(0);
  const std::vector<at::Tensor> parts = qkv.view({tokens, 3, -1, spec.head_dim}).unbind(1);
  if (out_rows.defined()) {
    return AttendFirstTokens(parts[0].index_select(0, out_rows), parts[1], parts[2], ctx);
  }
  Activations a;  // only the attention's outputs are filled
  AttendForward(parts, ctx, spec.attention_dropout, &a);
  return a.attended.view({tokens, -1});
}

InferenceRows InferForward(const InferenceRows& in, const std::vector<at::Tensor>& w,
                           const InferenceGemms& gemms, const LayerSpec& spec,
                           const AttentionContext& ctx, bool fp8_output,
                           const at::Tensor& out_rows) {
  const at::Tensor& x = in.x;
  const at::Tensor qkv = gemms.Linear(kQkvGemm, in, /*bias=*/true);
  InferenceRows attended;
  attended.x = InferAttention(qkv, spec, ctx, out_rows);
  // Every row after attention is a row of its own: the residual of the kept rows is theirs.
  const at::Tensor residual = out_rows.defined() ? x.index_select(0, out_rows) : x;
  const InferenceRows h = NormRows(gemms.Linear(kOutGemm, attended, /*bias=*/false), w[kOutBias],
                                   residual, w[kAttnNormWeight], w[kAttnNormBias], spec.eps,
                                   gemms.InFp8(kFfnInGemm), gemms.Fp8InputScaleInv(kFfnInGemm));
  return NormRows(gemms.FeedForward(h, EffectiveActivation(spec, x)), w[kFfnOutBias], h.x,
                  w[kFfnNormWeight], w[kFfnNormBias], spec.eps, fp8_output);
}

// How many tensors KeptActivations keeps under kSaveAll before the FP8 transposes.
constexpr size_t kSavedActivations = 17;

// What a FusedSaving mode keeps of the forward's activations; the rest is recomputed. Saving
// everything also keeps the FP8 transposes the forward wrote (`transposes`, which a lean layer
// gives up for the FFN-out input), and then not the FFN GEMMs' compute-dtype inputs h and g, which
// only their weight gradients read: two bytes an element given up for one.
std::vector<at::Tensor> KeptActivations(FusedSaving mode, const Activations& a, bool lean,
                                        internal::Fp8LayerTransposes& transposes) {
  switch (mode) {
    case FusedSaving::kRecomputeAll:
      return {a.x};
    case FusedSaving::kRecomputeToActivation:
      return {a.x, a.mask2, a.s2, a.mean2, a.rstd2};
    case FusedSaving::kSaveAll:
      break;
  }
  if (lean) transposes[kFfnOutGemm].input = at::Tensor();
  const auto unless_transposed = [&](const at::Tensor& t, internal::LayerGemm g) {
    return transposes[g].input.defined() ? at::Tensor() : t;
  };
  std::vector<at::Tensor> kept = {a.x,
                                  a.qkv,
                                  a.attended,
                                  a.lse,
                                  a.flash_rng,
                                  a.flash_unused,
                                  a.mask1,
                                  a.s1,
                                  a.mean1,
                                  a.rstd1,
                                  unless_transposed(a.h, kFfnInGemm),
                                  a.f1,
                                  lean ? at::Tensor() : unless_transposed(a.g, kFfnOutGemm),
                                  a.mask2,
                                  a.s2,
                                  a.mean2,
                                  a.rstd2};
  for (const internal::Fp8Transposes& t : transposes) {
    kept.push_back(t.input);
    kept.push_back(t.weight);
  }
  return kept;
}

// The FP8 transposes KeptActivations saved (none for the recompute modes, whose recompute writes
// them again).
internal::Fp8LayerTransposes SavedTransposes(FusedSaving mode,
                                             const torch::autograd::variable_list& saved) {
  internal::Fp8LayerTransposes t;
  if (mode != FusedSaving::kSaveAll) return t;
  for (size_t g = 0; g < t.size(); ++g) {
    t[g].input = saved[kSavedActivations + 2 * g];
    t[g].weight = saved[kSavedActivations + 2 * g + 1];
  }
  return t;
}

// The activations backward needs: what the mode kept, the rest recomputed on the forward's RNG
// stream (same attention dropout and masks), which is then given back to the rest of backward.
Activations Recover(torch::autograd::AutogradContext* actx,
                    const torch::autograd::variable_list& saved, const std::vector<at::Tensor>& w,
                    const LayerGemms& gemms, const LayerSpec& spec, const AttentionContext& ctx,
                    FusedSaving mode) {
  Activations a;
  if (mode == FusedSaving::kSaveAll) {
    a = {saved[0],  saved[1],  saved[2],  saved[3],  saved[4],  saved[5],
         saved[6],  saved[7],  saved[8],  saved[9],  saved[10], saved[11],
         saved[12], saved[13], saved[14], saved[15], saved[16], at::Tensor()};
    if (!a.g.defined() && !gemms.KeepsInputTranspose(kFfnOutGemm)) {
      a.g = Activate(a.f1, EffectiveActivation(spec, a.x));
    }
    return a;
  }
  const bool whole = mode == FusedSaving::kRecomputeAll;
  const at::Device device = saved[0].device();
  RngState stash = CaptureRng(device);
  RestoreRng(internal::LoadForwardRng(actx), device);
  at::Tensor y;
  a = Forward(saved[0], w, gemms, spec, ctx, /*through_ffn_out=*/whole, &y);
  RestoreRng(stash, device);
  if (!whole) {
    a.mask2 = saved[1];
    a.s2 = saved[2];
    a.mean2 = saved[3];
    a.rstd2 = saved[4];
  }
  return a;
}

// The layer's FP8 scales, for backward (the scaling state outlives the step: fused_layer.h).
void SaveFp8(torch::autograd::AutogradContext* actx, const FusedLayerFp8& fp8) {
  actx->saved_data["fp8_scaling"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(fp8.scaling));
  actx->saved_data["fp8_first_gemm"] = fp8.first_gemm;
}

FusedLayerFp8 LoadFp8(torch::autograd::AutogradContext* actx) {
  FusedLayerFp8 fp8;  // C++17: no designated initializers
  fp8.scaling =
      reinterpret_cast<Fp8Scaling*>(static_cast<intptr_t>(actx->saved_data["fp8_scaling"].toInt()));
  fp8.first_gemm = actx->saved_data["fp8_first_gemm"].toInt();
  return fp8;
}

class FusedLayer : public torch::autograd::Function<FusedLayer> {
 public:
  // Variables seen by autograd: x, then every tensor of `weights`. The rest is context
  // (compute_weights: casts of `weights` for this forward, or null).
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& x,
                            const at::TensorList& weights, const LayerSpec* spec,
                            const AttentionContext* ctx, int64_t saving,
                            const std::vector<at::Tensor>* compute_weights,
                            const FusedLayerFp8* fp8) {
    const at::Device device = x.device();
    const at::ScalarType dtype = x.scalar_type();
    // The function computes in x's dtype on its own; autocast must not re-cast (LayerNorm would
    // run in fp32 and return fp32).
    AutocastGuard no_autocast(device.type(), dtype, /*enabled=*/false);
    const FusedSaving mode = static_cast<FusedSaving>(saving);
    if (mode != FusedSaving::kSaveAll) internal::SaveForwardRng(actx, CaptureRng(device));
    internal::SaveLayerCall(actx, *spec, *ctx);
    actx->saved_data["saving"] = saving;
    SaveFp8(actx, *fp8);

    at::Tensor y;
    const std::vector<at::Tensor> w =
        compute_weights != nullptr ? *compute_weights : ComputeWeights(weights, dtype);
    // Only a forward whose activations are kept keeps its FP8 transposes; a recompute writes them.
    internal::Fp8LayerTransposes transposes;
    const LayerGemms gemms(w, *fp8, mode == FusedSaving::kSaveAll ? &transposes : nullptr);
    Activations a = Forward(x, w, gemms, *spec, *ctx, true, &y);
    for (int g = 0; g < kFusedLayerGemms; ++g) {  // a frozen weight has no gradient to take
      if (!weights[internal::kGemmWeight[g]].requires_grad()) transposes[g].input = at::Tensor();
    }
    std::vector<at::Tensor> saved = KeptActivations(mode, a, spec->lean, transposes);
    actx->saved_data["num_activations"] = static_cast<int64_t>(saved.size());
    // Saving everything also keeps the compute-dtype weights, so that backward need not cast them
    // again (a bf16 copy of the layer's weights: small next to its activations). The recompute
    // modes save memory instead, and cast again.
    const std::vector<at::Tensor>& kept_weights = mode == FusedSaving::kSaveAll ? w : weights.vec();
    saved.insert(saved.end(), kept_weights.begin(), kept_weights.end());
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
    const at::ScalarType dtype = x.scalar_type();
    // The engine runs backward with the autocast state of the thread that called backward();
    // under autocast, LayerNorm in the recompute would come back in fp32.
    AutocastGuard no_autocast(x.device().type(), dtype, /*enabled=*/false);
    const std::vector<at::Tensor> w =
        ComputeWeights(at::TensorList(saved).slice(num_activations, kNumLayerWeights), dtype);
    const FusedSaving mode = static_cast<FusedSaving>(actx->saved_data["saving"].toInt());
    internal::Fp8LayerTransposes transposes = SavedTransposes(mode, saved);
    const LayerGemms gemms(w, LoadFp8(actx), &transposes);
    Activations a = Recover(actx, saved, w, gemms, spec, ctx, mode);
    auto need = [&](int weight) { return actx->needs_input_grad(1 + weight); };
    torch::autograd::variable_list result(1 + kNumLayerWeights + 5);
    // Frozen weights get no gradient, even where a fused kernel computed one on the way.
    auto set = [&](int weight, const at::Tensor& g) {
      if (need(weight)) result[1 + weight] = g;
    };
    const at::Tensor dy = grad_outputs[0].to(dtype).contiguous();

    // LayerNorm 2, dropout, FFN out.
    // Each gradient an FP8 GEMM takes comes out of a pass of our own (the LayerNorms' backward,
    // the activation's, the q/k/v stack), which writes it in FP8 itself: no cast pass over it.
    cuda::DropoutResidualLayerNormGrads n2 = cuda::DropoutResidualLayerNormBackward(
        dy, at::Tensor(), a.s2, a.mean2, a.rstd2, w[kFfnNormWeight], a.mask2, spec.dropout,
        need(kFfnOutBias), OrNull(gemms.GradTarget(kFfnOutGemm)));
    set(kFfnNormWeight, n2.d_gamma);
    set(kFfnNormBias, n2.d_beta);
    set(kFfnOutBias, n2.d_bias);
    const int64_t tokens = x.size(0);
    const OutputGrad d_ffn_out = gemms.Grad(kFfnOutGemm, n2.d_input, need(kFfnOutWeight), tokens);
    if (need(kFfnOutWeight)) set(kFfnOutWeight, gemms.WeightGrad(d_ffn_out, a.g));
    a.g = at::Tensor();
    // Activation, FFN in; for tanh GELU the bias gradient is summed in the activation's backward
    // pass (a kernel with a cheaper slope than tanhf: the first one, with tanhf, lost to
    // gelu_backward + the row sum). cuBLASLt's DGELU_BGRAD epilogue would fuse both into the
    // GEMM, but on the H200 it ran about twice as long as the GEMM, gelu_backward and the row sum
    // apart: bench/cuda/FUSED_KERNELS.md.
    const cuda::GradWithBiasGrad f1 =
        ActivationBackward(gemms.InputGrad(d_ffn_out), a.f1, EffectiveActivation(spec, x),
                           need(kFfnInBias), OrNull(gemms.GradTarget(kFfnInGemm)));
    const OutputGrad d_ffn_in = gemms.Grad(kFfnInGemm, f1.grad, need(kFfnInWeight), tokens);
    if (need(kFfnInWeight)) set(kFfnInWeight, gemms.WeightGrad(d_ffn_in, a.h));
    set(kFfnInBias, f1.bias_grad);
    // LayerNorm 1 (the residual's gradient n2.d_sum joins inside), dropout, output projection.
    cuda::DropoutResidualLayerNormGrads n1 = cuda::DropoutResidualLayerNormBackward(
        gemms.InputGrad(d_ffn_in), n2.d_sum, a.s1, a.mean1, a.rstd1, w[kAttnNormWeight], a.mask1,
        spec.dropout, need(kOutBias), OrNull(gemms.GradTarget(kOutGemm)));
    set(kAttnNormWeight, n1.d_gamma);
    set(kAttnNormBias, n1.d_beta);
    set(kOutBias, n1.d_bias);
    const at::Tensor attended = a.attended.view({x.size(0), -1});
    const OutputGrad d_out = gemms.Grad(kOutGemm, n1.d_input, need(kOutWeight), tokens);
    if (need(kOutWeight)) set(kOutWeight, gemms.WeightGrad(d_out, attended));
    // Attention, QKV.
    const std::array<at::Tensor, 3> d =
        AttendBackward(gemms.InputGrad(d_out).view(a.attended.sizes()), a, ctx, spec);
    const cuda::GradWithBiasGrad qkv = cuda::StackWithBiasGrad(d[0], d[1], d[2], need(kQkvBias),
                                                               OrNull(gemms.GradTarget(kQkvGemm)));
    const OutputGrad d_qkv = gemms.Grad(kQkvGemm, qkv.grad, need(kQkvWeight), tokens);
    if (need(kQkvWeight)) set(kQkvWeight, gemms.WeightGrad(d_qkv, x));
    set(kQkvBias, qkv.bias_grad);
    // The residual's gradient joins in place: d_sum is this function's own buffer, and the stream
    // runs every earlier read of it (d_input may alias it) before this write.
    if (actx->needs_input_grad(0)) {
      result[0] = gemms.InputGrad(d_qkv, /*accumulate=*/n1.d_sum);
    }
    return result;
  }
};

}  // namespace

bool FusedLayerSupported(const at::Tensor& x, const LayerSpec& spec, const AttentionContext& ctx) {
  if (spec.pre_ln || x.dim() != 2) return false;
  switch (ctx.backend) {
    case AttentionBackend::kVarlenFlash:
    case AttentionBackend::kVarlenFa3:  // FA3 where it runs, FA2 otherwise (fused_attention.cc)
      return x.is_cuda() && IsHalf(FusedComputeDtype(x));
    case AttentionBackend::kVarlenCudnn:
      return x.is_cuda() && FusedComputeDtype(x) == at::kBFloat16 && cuda::CudnnAttentionBuilt();
    case AttentionBackend::kVarlenReference:
    case AttentionBackend::kVarlenGrouped:
      return spec.attention_dropout == 0.0;
    case AttentionBackend::kAuto:
    case AttentionBackend::kDense:
    case AttentionBackend::kVarlenEfficient:  // the generic layer's autograd runs it
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
                                    FusedSaving saving,
                                    const std::vector<at::Tensor>* compute_weights,
                                    const FusedLayerFp8& fp8) {
  TORCH_CHECK(x.scalar_type() == FusedComputeDtype(x),
              "FusedEncoderLayerForward: x must be in the compute dtype");
  if (compute_weights != nullptr) {
    TORCH_CHECK(compute_weights->size() == weights.size(),
                "FusedEncoderLayerForward: ", compute_weights->size(), " compute weights for ",
                weights.size(), " weights");
  }
  if (fp8.scaling != nullptr) {
    TORCH_CHECK(fp8.first_gemm >= 0 && fp8.first_gemm + kFusedLayerGemms <= fp8.scaling->gemms(),
                "FusedEncoderLayerForward: FP8 GEMMs ", fp8.first_gemm, "..",
                fp8.first_gemm + kFusedLayerGemms - 1, " outside the scaling's ",
                fp8.scaling->gemms());
  }
  return FusedLayer::apply(x, weights, &spec, &ctx, static_cast<int64_t>(saving), compute_weights,
                           &fp8);
}

InferenceRows FusedEncoderLayerInfer(const InferenceRows& in, at::TensorList weights,
                                     const LayerSpec& spec, const AttentionContext& ctx,
                                     const std::vector<at::Tensor>* compute_weights,
                                     const Fp8LayerWeights* fp8, bool fp8_output,
                                     const Int8LayerWeights* int8, const at::Tensor& out_rows) {
  const at::Tensor& x = in.x;
  TORCH_CHECK(!at::GradMode::is_enabled(),
              "FusedEncoderLayerInfer: grad mode is on; training uses FusedEncoderLayerForward");
  const at::ScalarType dtype = x.scalar_type();
  TORCH_CHECK(dtype == FusedComputeDtype(x),
              "FusedEncoderLayerInfer: x must be in the compute dtype");
  if (compute_weights != nullptr) {
    TORCH_CHECK(compute_weights->size() == weights.size(),
                "FusedEncoderLayerInfer: ", compute_weights->size(), " compute weights for ",
                weights.size(), " weights");
  }
  // As in FusedLayer::forward: the layer computes in x's dtype itself; autocast must not re-cast.
  AutocastGuard no_autocast(x.device().type(), dtype, /*enabled=*/false);
  const std::vector<at::Tensor> w =
      compute_weights != nullptr ? *compute_weights : ComputeWeights(weights, dtype);
  TORCH_CHECK(!out_rows.defined() || !fp8_output,
              "FusedEncoderLayerInfer: a layer of first-token rows has no next layer");
  return InferForward(in, w, InferenceGemms(w, fp8, int8), spec, ctx, fp8_output, out_rows);
}

absl::StatusOr<std::vector<Int8LayerWeights>> PackInt8InferenceWeights(
    const std::vector<at::TensorList>& layers, bool every_bias) {
  std::vector<Int8LayerWeights> out;
  out.reserve(layers.size());
  for (at::TensorList w : layers) {
    Int8LayerWeights& layer = out.emplace_back();
    for (int g = 0; g < kFusedLayerGemms; ++g) {
      const int weight = internal::kGemmWeight[g];
      const bool bias =
          every_bias || internal::GemmAddsBias(static_cast<internal::LayerGemm>(g));
      absl::StatusOr<Int8Linear> packed =
          Int8Linear::Pack(w[weight], bias ? w[weight + 1] : at::Tensor());
      if (!packed.ok()) return packed.status();
      layer[g] = *std::move(packed);
    }
  }
  return out;
}

std::vector<std::vector<at::Tensor>> FusedComputeWeights(const std::vector<at::TensorList>& layers,
                                                         at::ScalarType dtype) {
  const at::NoGradGuard no_grad;
  // As .to(dtype): LayerNorm weights and weights already in the compute dtype are used as given.
  const auto cast = [&](at::TensorList w, size_t i) {
    return !IsNormWeight(static_cast<int>(i)) && w[i].scalar_type() != dtype;
  };
  std::vector<std::vector<at::Tensor>> out;
  std::vector<at::Tensor> sources, copies;
  for (at::TensorList w : layers) {
    int64_t numel = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (cast(w, i)) numel = AlignedOffset(numel) + w[i].numel();
    }
    const at::Tensor buffer = at::empty({numel}, w[0].options().dtype(dtype));
    std::vector<at::Tensor>& layer = out.emplace_back();
    int64_t offset = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      if (!cast(w, i)) {
        layer.push_back(w[i]);
        continue;
      }
      offset = AlignedOffset(offset);
      layer.push_back(buffer.narrow(0, offset, w[i].numel()).view(w[i].sizes()));
      offset += w[i].numel();
      sources.push_back(w[i]);
      copies.push_back(layer.back());
    }
  }
  if (!copies.empty()) at::_foreach_copy_(copies, sources);
  return out;
}

}  // namespace padless::models
