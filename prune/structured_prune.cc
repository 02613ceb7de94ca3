#include "padless/prune/structured_prune.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/unit_rows.h"

namespace padless::prune {

namespace {

absl::Status CheckIndices(const std::vector<int64_t>& keep, int64_t now, int64_t layer,
                          const char* what) {
  if (keep.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("prune plan: layer ", layer, " keeps no ", what));
  }
  for (size_t k = 0; k < keep.size(); ++k) {
    if (keep[k] < 0 || keep[k] >= now || (k > 0 && keep[k] <= keep[k - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("prune plan: layer ", layer, "'s ", what,
                                                     " indices must be ascending, unique and in "
                                                     "[0, ",
                                                     now, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPlan(const models::EncoderConfig& c, const PrunePlan& plan) {
  if (static_cast<int64_t>(plan.keep_heads.size()) != c.layers() ||
      static_cast<int64_t>(plan.keep_ffn.size()) != c.layers()) {
    return absl::InvalidArgumentError(absl::StrCat("prune plan: lists for ", plan.keep_heads.size(),
                                                   " and ", plan.keep_ffn.size(),
                                                   " layers, the model has ", c.layers()));
  }
  for (int64_t l = 0; l < c.layers(); ++l) {
    if (absl::Status s = CheckIndices(plan.keep_heads[l], c.heads_in_layer(l), l, "head");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckIndices(plan.keep_ffn[l], c.ffn_in_layer(l), l, "FFN neuron");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Layer `layer`'s weights with only the kept units, in LayerWeight order. A ModernBERT layer's
// FFN-in weight keeps each kept neuron's value and gate rows; the weights it leaves out
// (undefined: biases its config has not, layer 0's attention norm) stay undefined.
std::vector<at::Tensor> PrunedLayer(at::TensorList w, const models::EncoderConfig& c, int64_t layer,
                                    const PrunePlan& plan) {
  using namespace models;  // the LayerWeight names
  const at::Device device = w[kQkvWeight].device();
  const at::Tensor qkv =
      HeadRows(plan.keep_heads[layer], c.heads_in_layer(layer), c.head_dim(), 3).to(device);
  const at::Tensor attended =
      HeadRows(plan.keep_heads[layer], c.heads_in_layer(layer), c.head_dim(), 1).to(device);
  const at::Tensor ffn_in =
      FfnInRows(plan.keep_ffn[layer], c.ffn_in_layer(layer), GatedFfn(c)).to(device);
  const at::Tensor ffn_out = at::tensor(plan.keep_ffn[layer], at::kLong).to(device);
  const auto select = [&](int k, int64_t dim, const at::Tensor& index) {
    return w[k].defined() ? w[k].index_select(dim, index) : at::Tensor();
  };
  std::vector<at::Tensor> out(w.begin(), w.end());
  out[kQkvWeight] = select(kQkvWeight, 0, qkv);
  out[kQkvBias] = select(kQkvBias, 0, qkv);
  out[kOutWeight] = select(kOutWeight, 1, attended);
  out[kFfnInWeight] = select(kFfnInWeight, 0, ffn_in);
  out[kFfnInBias] = select(kFfnInBias, 0, ffn_in);
  out[kFfnOutWeight] = select(kFfnOutWeight, 1, ffn_out);
  return out;
}

}  // namespace

absl::StatusOr<models::EncoderConfig> PrunedConfig(const models::EncoderConfig& config,
                                                   const PrunePlan& plan) {
  if (absl::Status s = CheckPlan(config, plan); !s.ok()) return s;
  std::vector<std::vector<int64_t>> removed(config.layers());
  std::vector<int64_t> ffn(config.layers());
  for (int64_t l = 0; l < config.layers(); ++l) {
    const std::vector<int64_t> original = config.kept_heads(l);
    std::vector<bool> stays(original.size(), false);
    for (int64_t k : plan.keep_heads[l]) stays[k] = true;
    if (!config.pruned_heads().empty()) removed[l] = config.pruned_heads()[l];
    for (size_t k = 0; k < original.size(); ++k) {
      if (!stays[k]) removed[l].push_back(original[k]);
    }
    std::sort(removed[l].begin(), removed[l].end());
    ffn[l] = static_cast<int64_t>(plan.keep_ffn[l].size());
  }
  models::EncoderConfig pruned = config;
  pruned.pruned_heads(std::move(removed));
  const bool ffn_pruned =
      !config.layer_ffn().empty() ||
      std::any_of(ffn.begin(), ffn.end(), [&](int64_t n) { return n != config.ffn(); });
  pruned.layer_ffn(ffn_pruned ? ffn : std::vector<int64_t>{});
  if (absl::Status s = pruned.Validate(); !s.ok()) return s;
  return pruned;
}

absl::StatusOr<models::EncoderClassifier> PruneModel(models::EncoderClassifier& model,
                                                     const PrunePlan& plan) {
  const models::EncoderConfig& config = model->config();
  absl::StatusOr<models::EncoderConfig> pruned_config = PrunedConfig(config, plan);
  if (!pruned_config.ok()) return pruned_config.status();
  const at::Tensor any = model->parameters().front();
  models::EncoderClassifier pruned(*pruned_config);
  pruned->to(any.device(), any.scalar_type());
  pruned->set_runtime(model->runtime());
  pruned->train(model->is_training());

  at::NoGradGuard no_grad;
  // Everything outside the layers has the same shape; the layers' weights are sliced.
  auto from = model->named_parameters();
  for (auto& p : pruned->named_parameters()) {
    if (p.key().rfind("layer", 0) == 0) continue;
    p.value().copy_(from[p.key()]);
  }
  const std::vector<at::TensorList> old_layers = model->LayerWeights();
  const std::vector<at::TensorList> new_layers = pruned->LayerWeights();
  for (int64_t l = 0; l < config.layers(); ++l) {
    const std::vector<at::Tensor> sliced = PrunedLayer(old_layers[l], config, l, plan);
    for (size_t k = 0; k < sliced.size(); ++k) {
      if (sliced[k].defined()) new_layers[l][k].copy_(sliced[k]);
    }
  }
  return pruned;
}

int64_t ParameterCount(models::EncoderClassifier& model) {
  int64_t n = 0;
  for (const at::Tensor& p : model->parameters()) n += p.numel();
  return n;
}

}  // namespace padless::prune
