#include "padless/models/recompute.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>
#include <vector>

#include "layer_call.h"
#include "padless/models/autocast.h"
#include "padless/models/rng_state.h"

namespace padless::models {

namespace {

using internal::CaptureRng;
using internal::LoadAttentionContext;
using internal::LoadForwardRng;
using internal::LoadLayerSpec;
using internal::RestoreRng;
using internal::RngState;
using internal::SaveForwardRng;
using internal::SaveLayerCall;

// The part of a layer that `scope` names, as a function of its input.
at::Tensor RunScope(CheckpointScope scope, const at::Tensor& x, at::TensorList weights,
                    const LayerSpec& spec, const AttentionContext& ctx) {
  switch (scope) {
    case CheckpointScope::kLayer:
    case CheckpointScope::kSelective:  // only the fused layer can recompute part of a layer
      break;
    case CheckpointScope::kFfn:
      return FfnBlockForward(x, weights, spec);
    case CheckpointScope::kAttention:
      return AttentionBlockForward(x, weights, spec, ctx);
  }
  return EncoderLayerForward(x, weights, spec, ctx);
}

// The layer's weight list from its defined tensors and the slots they fill (`slots`: the list's
// length, then each defined tensor's index): autograd functions take defined tensors only, and a
// ModernBERT layer's list has undefined ones (biases it has not).
std::vector<at::Tensor> FullWeights(at::TensorList defined, const std::vector<int64_t>& slots) {
  std::vector<at::Tensor> full(slots.at(0));
  for (size_t i = 0; i < defined.size(); ++i) full[slots.at(i + 1)] = defined[i];
  return full;
}

class LayerCheckpoint : public torch::autograd::Function<LayerCheckpoint> {
 public:
  // Variables seen by autograd: x, then every defined tensor of the layer's weights. The rest is
  // context.
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& x,
                            const at::TensorList& weights, const LayerSpec* spec,
                            const AttentionContext* ctx, int64_t scope,
                            const std::vector<int64_t>& slots) {
    actx->saved_data["scope"] = scope;
    actx->saved_data["slots"] = slots;
    const at::Device device = x.device();
    SaveForwardRng(actx, CaptureRng(device));
    const c10::DeviceType dt = device.type();
    actx->saved_data["autocast"] = at::autocast::is_autocast_enabled(dt);
    actx->saved_data["autocast_dtype"] = static_cast<int64_t>(at::autocast::get_autocast_dtype(dt));
    SaveLayerCall(actx, *spec, *ctx);
    std::vector<at::Tensor> saved = {x};
    saved.insert(saved.end(), weights.begin(), weights.end());
    actx->save_for_backward(saved);
    return RunScope(static_cast<CheckpointScope>(scope), x, FullWeights(weights, slots), *spec,
                    *ctx);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* actx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto& d = actx->saved_data;
    const LayerSpec spec = LoadLayerSpec(actx);
    const AttentionContext ctx = LoadAttentionContext(actx);

    torch::autograd::variable_list saved = actx->get_saved_variables();
    at::Tensor x = saved[0].detach().requires_grad_(true);
    std::vector<at::Tensor> weights(saved.begin() + 1, saved.end());
    const at::Device device = x.device();

    // Recompute with the forward's RNG stream and autocast state, then put the RNG back so the
    // rest of the backward pass (and later steps) see the stream they would have seen anyway.
    RngState stash = CaptureRng(device);
    RestoreRng(LoadForwardRng(actx), device);
    at::Tensor out;
    {
      at::AutoGradMode grad_on(true);
      AutocastGuard autocast(device.type(),
                             static_cast<c10::ScalarType>(d["autocast_dtype"].toInt()),
                             d["autocast"].toBool());
      out = RunScope(static_cast<CheckpointScope>(d["scope"].toInt()), x,
                     FullWeights(weights, d["slots"].toIntVector()), spec, ctx);
    }
    RestoreRng(stash, device);

    // Gradients for x and for the weights that require them; undefined for the others and for
    // the four non-tensor arguments (spec, ctx, scope, slots).
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
    torch::autograd::variable_list result(1 + weights.size() + 4);
    for (size_t i = 0; i < wrt_index.size(); ++i) result[wrt_index[i]] = grads[i];
    return result;
  }
};

}  // namespace

at::Tensor CheckpointedLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx,
                                    CheckpointScope scope) {
  std::vector<at::Tensor> defined;
  std::vector<int64_t> slots = {static_cast<int64_t>(weights.size())};
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!weights[i].defined()) continue;
    defined.push_back(weights[i]);
    slots.push_back(static_cast<int64_t>(i));
  }
  auto checkpointed = [&](const at::Tensor& input) {
    return LayerCheckpoint::apply(input, at::TensorList(defined), &spec, &ctx,
                                  static_cast<int64_t>(scope), slots);
  };
  switch (scope) {
    case CheckpointScope::kLayer:
    case CheckpointScope::kSelective:
      break;
    case CheckpointScope::kFfn:
      return checkpointed(AttentionBlockForward(x, weights, spec, ctx));
    case CheckpointScope::kAttention:
      return FfnBlockForward(checkpointed(x), weights, spec);
  }
  return checkpointed(x);
}

}  // namespace padless::models
