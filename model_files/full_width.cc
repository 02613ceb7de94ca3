#include "padless/model_files/full_width.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "padless/models/encoder_layer.h"
#include "padless/models/unit_rows.h"

namespace padless::model_files {

namespace {

using models::EncoderClassifier;
using models::EncoderConfig;

// Where a narrow layer's units sit in the wide layer: head and FFN-neuron positions in the wide
// layer's weights, in the narrow layer's order.
struct KeptUnits {
  std::vector<int64_t> heads;
  std::vector<int64_t> neurons;
};

// The dimension and indices at which layer weight `k` of the narrow layer sits in layer `layer`
// of the wide model `wide`; an undefined index for the weights that pruning leaves whole (norms,
// output biases).
std::pair<int64_t, at::Tensor> Placement(int k, const KeptUnits& kept, const EncoderConfig& wide,
                                         int64_t layer) {
  using namespace models;  // the LayerWeight names
  switch (k) {
    case kQkvWeight:
    case kQkvBias:
      return {0, HeadRows(kept.heads, wide.heads_in_layer(layer), wide.head_dim(), 3)};
    case kOutWeight:
      return {1, HeadRows(kept.heads, wide.heads_in_layer(layer), wide.head_dim(), 1)};
    case kFfnInWeight:
    case kFfnInBias:
      return {0, FfnInRows(kept.neurons, wide.ffn_in_layer(layer), GatedFfn(wide))};
    case kFfnOutWeight:
      return {1, at::tensor(kept.neurons, at::kLong)};
    default:
      return {0, at::Tensor()};
  }
}

// A model of `config` holding `from`'s parameters: those outside the layers copied, the layers'
// units moved between the wide form (zeros where no unit is kept) and the narrow one by `kept`.
// `widen`: `config` is the wide form; else `from` is. Weights a layer leaves out (undefined:
// ModernBERT's absent biases and layer 0's attention norm) are skipped.
EncoderClassifier Rebuild(EncoderClassifier& from, const EncoderConfig& config,
                          const std::vector<KeptUnits>& kept, bool widen) {
  const at::Tensor any = from->parameters().front();
  EncoderClassifier to(config);
  to->to(any.device(), any.scalar_type());
  to->set_runtime(from->runtime());
  to->train(from->is_training());
  at::NoGradGuard no_grad;
  auto from_params = from->named_parameters();
  for (auto& p : to->named_parameters()) {
    if (p.key().rfind("layer", 0) != 0) p.value().copy_(from_params[p.key()]);
  }
  const std::vector<at::TensorList> from_layers = from->LayerWeights();
  const std::vector<at::TensorList> to_layers = to->LayerWeights();
  const EncoderConfig& wide = widen ? config : from->config();
  for (int64_t l = 0; l < config.layers(); ++l) {
    for (int k = 0; k < models::kNumLayerWeights; ++k) {
      const at::Tensor& source = from_layers[l][k];
      const at::Tensor& target = to_layers[l][k];
      if (!target.defined()) continue;
      auto [dim, index] = Placement(k, kept[l], wide, l);
      if (!index.defined()) {
        target.copy_(source);
      } else if (widen) {
        target.zero_().index_copy_(dim, index.to(target.device()), source);
      } else {
        target.copy_(source.index_select(dim, index.to(source.device())));
      }
    }
  }
  return to;
}

// Whether each of a layer's `heads` heads, or of its FFN neurons, has a nonzero weight (a NaN
// counts as nonzero).
std::vector<bool> InUse(const at::Tensor& any_nonzero) {
  const at::Tensor cpu = any_nonzero.to(at::kCPU, at::kBool).contiguous();
  const bool* p = cpu.data_ptr<bool>();
  return std::vector<bool>(p, p + cpu.numel());
}

std::vector<bool> HeadsInUse(at::TensorList w, int64_t heads) {
  using namespace models;
  const int64_t hidden = w[kOutWeight].size(0);
  at::Tensor in_use = w[kQkvWeight].ne(0).reshape({3, heads, -1}).any(2).any(0);
  if (w[kQkvBias].defined()) {  // ModernBERT's is absent without attention_bias
    in_use = in_use.logical_or(w[kQkvBias].ne(0).reshape({3, heads, -1}).any(2).any(0));
  }
  return InUse(in_use.logical_or(w[kOutWeight].ne(0).reshape({hidden, heads, -1}).any(2).any(0)));
}

// `gated`: the FFN-in rows are value rows, then gate rows (models::FfnInRows); a neuron is in use
// when either of its rows is.
std::vector<bool> NeuronsInUse(at::TensorList w, bool gated) {
  using namespace models;
  at::Tensor rows = w[kFfnInWeight].ne(0).any(1);
  if (w[kFfnInBias].defined()) rows = rows.logical_or(w[kFfnInBias].ne(0));
  const at::Tensor in = rows.reshape({gated ? 2 : 1, -1}).any(0);
  return InUse(in.logical_or(w[kFfnOutWeight].ne(0).any(0)));
}

// The positions whose flag is set; the first position when none is (every layer keeps a unit).
std::vector<int64_t> Kept(const std::vector<bool>& in_use) {
  std::vector<int64_t> kept;
  for (size_t i = 0; i < in_use.size(); ++i) {
    if (in_use[i]) kept.push_back(static_cast<int64_t>(i));
  }
  if (kept.empty()) kept.push_back(0);
  return kept;
}

}  // namespace

absl::StatusOr<EncoderClassifier> FullWidthModel(EncoderClassifier& model) {
  const EncoderConfig& c = model->config();
  if (!c.pruned()) return model;
  std::vector<KeptUnits> kept(c.layers());
  for (int64_t l = 0; l < c.layers(); ++l) {
    kept[l].heads = c.kept_heads(l);
    kept[l].neurons.resize(c.ffn_in_layer(l));
    std::iota(kept[l].neurons.begin(), kept[l].neurons.end(), 0);
  }
  EncoderConfig wide = c;
  wide.pruned_heads({}).layer_ffn({});
  if (absl::Status s = wide.Validate(); !s.ok()) return s;
  return Rebuild(model, wide, kept, /*widen=*/true);
}

absl::StatusOr<EncoderClassifier> DropZeroUnits(EncoderClassifier& model) {
  const EncoderConfig& c = model->config();
  const std::vector<at::TensorList> layers = model->LayerWeights();
  std::vector<KeptUnits> kept(c.layers());
  std::vector<std::vector<int64_t>> removed(c.layers());
  std::vector<int64_t> widths(c.layers());
  bool dropped = false, heads_removed = false;
  for (int64_t l = 0; l < c.layers(); ++l) {
    kept[l].heads = Kept(HeadsInUse(layers[l], c.heads_in_layer(l)));
    kept[l].neurons = Kept(NeuronsInUse(layers[l], models::GatedFfn(c)));
    const std::vector<int64_t> original = c.kept_heads(l);
    if (!c.pruned_heads().empty()) removed[l] = c.pruned_heads()[l];
    for (size_t h = 0, k = 0; h < original.size(); ++h) {
      if (k < kept[l].heads.size() && kept[l].heads[k] == static_cast<int64_t>(h)) {
        ++k;
      } else {
        removed[l].push_back(original[h]);
      }
    }
    std::sort(removed[l].begin(), removed[l].end());
    heads_removed = heads_removed || !removed[l].empty();
    widths[l] = static_cast<int64_t>(kept[l].neurons.size());
    dropped = dropped || static_cast<int64_t>(kept[l].heads.size()) != c.heads_in_layer(l) ||
              widths[l] != c.ffn_in_layer(l);
  }
  if (!dropped) return model;
  EncoderConfig narrow = c;
  narrow.pruned_heads(heads_removed ? removed : std::vector<std::vector<int64_t>>{});
  const bool ffn_pruned =
      !c.layer_ffn().empty() ||
      std::any_of(widths.begin(), widths.end(), [&](int64_t n) { return n != c.ffn(); });
  narrow.layer_ffn(ffn_pruned ? widths : std::vector<int64_t>{});
  if (absl::Status s = narrow.Validate(); !s.ok()) return s;
  return Rebuild(model, narrow, kept, /*widen=*/false);
}

}  // namespace padless::model_files
