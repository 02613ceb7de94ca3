#include "padless/models/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "padless/models/autocast.h"
#include "rng_state.h"

namespace padless::models {

absl::StatusOr<CheckpointPolicy> CheckpointPolicy::Parse(const std::string& text) {
  if (text == "none") return None();
  if (text == "all") return All();
  int64_t k = 0;
  if (absl::StartsWith(text, "every:") && absl::SimpleAtoi(text.substr(6), &k) && k >= 1) {
    return CheckpointPolicy{k};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint: bad policy '", text, "' (expected none, all or every:K, K >= 1)"));
}

std::string CheckpointPolicy::ToString() const {
  if (every == 0) return "none";
  if (every == 1) return "all";
  return absl::StrCat("every:", every);
}

namespace {

using internal::CaptureRng;
using internal::RestoreRng;
using internal::RngState;

class LayerCheckpoint : public torch::autograd::Function<LayerCheckpoint> {
 public:
  // Variables seen by autograd: x, then every tensor of `weights`. The rest is context.
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& x,
                            const at::TensorList& weights, const LayerSpec* spec,
                            const AttentionContext* ctx) {
    const at::Device device = x.device();
    RngState rng = CaptureRng(device);
    actx->saved_data["rng_cpu"] = rng.cpu;
    if (rng.cuda.defined()) actx->saved_data["rng_cuda"] = rng.cuda;
    const c10::DeviceType dt = device.type();
    actx->saved_data["autocast"] = at::autocast::is_autocast_enabled(dt);
    actx->saved_data["autocast_dtype"] = static_cast<int64_t>(at::autocast::get_autocast_dtype(dt));
    actx->saved_data["heads"] = spec->heads;
    actx->saved_data["eps"] = spec->eps;
    actx->saved_data["dropout"] = spec->dropout;
    actx->saved_data["attention_dropout"] = spec->attention_dropout;
    actx->saved_data["pre_ln"] = spec->pre_ln;
    actx->saved_data["activation"] = static_cast<int64_t>(spec->activation);
    actx->saved_data["backend"] = static_cast<int64_t>(ctx->backend);
    if (ctx->mask.defined()) actx->saved_data["mask"] = ctx->mask;
    if (ctx->cu_seqlens.defined()) actx->saved_data["cu_seqlens"] = ctx->cu_seqlens;
    actx->saved_data["max_seqlen"] = ctx->max_seqlen;
    actx->saved_data["host_offsets"] = ctx->host_offsets;
    std::vector<at::Tensor> saved = {x};
    saved.insert(saved.end(), weights.begin(), weights.end());
    actx->save_for_backward(saved);
    return EncoderLayerForward(x, weights, *spec, *ctx);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* actx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto& d = actx->saved_data;
    LayerSpec spec;
    spec.heads = d["heads"].toInt();
    spec.eps = d["eps"].toDouble();
    spec.dropout = d["dropout"].toDouble();
    spec.attention_dropout = d["attention_dropout"].toDouble();
    spec.pre_ln = d["pre_ln"].toBool();
    spec.activation = static_cast<Activation>(d["activation"].toInt());
    AttentionContext ctx;
    ctx.backend = static_cast<AttentionBackend>(d["backend"].toInt());
    if (d.count("mask")) ctx.mask = d["mask"].toTensor();
    if (d.count("cu_seqlens")) ctx.cu_seqlens = d["cu_seqlens"].toTensor();
    ctx.max_seqlen = d["max_seqlen"].toInt();
    ctx.host_offsets = d["host_offsets"].toIntVector();

    torch::autograd::variable_list saved = actx->get_saved_variables();
    at::Tensor x = saved[0].detach().requires_grad_(true);
    std::vector<at::Tensor> weights(saved.begin() + 1, saved.end());
    const at::Device device = x.device();

    // Recompute with the forward's RNG stream and autocast state, then put the RNG back so the
    // rest of the backward pass (and later steps) see the stream they would have seen anyway.
    RngState stash = CaptureRng(device);
    RngState forward_rng;
    forward_rng.cpu = d["rng_cpu"].toTensor();
    if (d.count("rng_cuda")) forward_rng.cuda = d["rng_cuda"].toTensor();
    RestoreRng(forward_rng, device);
    at::Tensor out;
    {
      at::AutoGradMode grad_on(true);
      AutocastGuard autocast(device.type(),
                             static_cast<c10::ScalarType>(d["autocast_dtype"].toInt()),
                             d["autocast"].toBool());
      out = EncoderLayerForward(x, weights, spec, ctx);
    }
    RestoreRng(stash, device);

    // Gradients for x and for the weights that require them; undefined for the others and for
    // the two non-tensor arguments (spec, ctx).
    std::vector<at::Tensor> wrt = {x};
    std::vector<size_t> wrt_index = {0};
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i].requires_grad()) {
        wrt.push_back(weights[i]);
        wrt_index.push_back(i + 1);
      }
    }
    torch::autograd::variable_list grads;
    {
      at::AutoGradMode grad_on(true);
      grads = torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    }
    torch::autograd::variable_list result(1 + weights.size() + 2);
    for (size_t i = 0; i < wrt_index.size(); ++i) result[wrt_index[i]] = grads[i];
    return result;
  }
};

}  // namespace

at::Tensor CheckpointedLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx) {
  return LayerCheckpoint::apply(x, weights, &spec, &ctx);
}

}  // namespace padless::models
