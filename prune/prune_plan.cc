#include "padless/prune/prune_plan.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace padless::prune {

namespace {

struct Ranked {
  double score;  // normalised within its layer
  int64_t layer;
  int64_t index;
  bool operator<(const Ranked& o) const {
    return std::tie(score, layer, index) < std::tie(o.score, o.layer, o.index);
  }
};

// All units, lowest normalised score first.
std::vector<Ranked> RankAcrossLayers(const std::vector<std::vector<double>>& scores) {
  std::vector<Ranked> ranked;
  for (size_t l = 0; l < scores.size(); ++l) {
    double norm = 0.0;
    for (double s : scores[l]) norm += s * s;
    norm = std::sqrt(norm);
    for (size_t i = 0; i < scores[l].size(); ++i) {
      ranked.push_back(
          {norm > 0 ? scores[l][i] / norm : 0.0, static_cast<int64_t>(l), static_cast<int64_t>(i)});
    }
  }
  std::sort(ranked.begin(), ranked.end());
  return ranked;
}

int64_t Total(const std::vector<std::vector<double>>& scores) {
  int64_t n = 0;
  for (const auto& l : scores) n += static_cast<int64_t>(l.size());
  return n;
}

// How many more units must go for `share` of `original` units to be gone when `now` are left.
int64_t StillToRemove(double share, int64_t original, int64_t now) {
  const int64_t target_left = original - static_cast<int64_t>(std::llround(share * original));
  return std::max<int64_t>(0, now - target_left);
}

// The ascending indices of each layer not in `removed`.
std::vector<std::vector<int64_t>> Kept(const std::vector<std::vector<double>>& scores,
                                       const std::vector<std::vector<bool>>& removed) {
  std::vector<std::vector<int64_t>> keep(scores.size());
  for (size_t l = 0; l < scores.size(); ++l) {
    for (size_t i = 0; i < scores[l].size(); ++i) {
      if (!removed[l][i]) keep[l].push_back(static_cast<int64_t>(i));
    }
  }
  return keep;
}

std::vector<std::vector<bool>> NoneRemoved(const std::vector<std::vector<double>>& scores) {
  std::vector<std::vector<bool>> removed;
  for (const auto& l : scores) removed.emplace_back(l.size(), false);
  return removed;
}

std::vector<std::vector<int64_t>> PlanHeads(const std::vector<std::vector<double>>& scores,
                                            int64_t remove) {
  std::vector<std::vector<bool>> removed = NoneRemoved(scores);
  std::vector<int64_t> left;
  for (const auto& l : scores) left.push_back(static_cast<int64_t>(l.size()));
  for (const Ranked& r : RankAcrossLayers(scores)) {
    if (remove == 0) break;
    if (left[r.layer] == 1) continue;  // every layer keeps a head
    removed[r.layer][r.index] = true;
    --left[r.layer];
    --remove;
  }
  return Kept(scores, removed);
}

// A layer's FFN neurons, lowest normalised score first, and how many of them are gone.
struct FfnLayer {
  std::vector<Ranked> ascending;
  int64_t removed = 0;
  int64_t left() const { return static_cast<int64_t>(ascending.size()) - removed; }
  // The next block brings the width to a multiple: the remainder first, then whole multiples.
  int64_t next_block(int64_t multiple) const {
    return left() % multiple != 0 ? left() % multiple : multiple;
  }
  double next_block_mean(int64_t multiple) const {
    const int64_t block = next_block(multiple);
    double sum = 0.0;
    for (int64_t k = removed; k < removed + block; ++k) sum += ascending[k].score;
    return sum / static_cast<double>(block);
  }
};

// FFN: whole blocks of `multiple` neurons go, each time from the layer whose next block has the
// lowest mean normalised score, until the count is as close to `remove` as blocks allow. Every
// width stays a multiple (after its first block) and at least one multiple.
std::vector<std::vector<int64_t>> PlanFfn(const std::vector<std::vector<double>>& scores,
                                          int64_t remove, int64_t multiple) {
  std::vector<FfnLayer> layers(scores.size());
  for (const Ranked& r : RankAcrossLayers(scores)) layers[r.layer].ascending.push_back(r);
  int64_t removed = 0;
  while (removed < remove) {
    int64_t best = -1;
    for (size_t l = 0; l < layers.size(); ++l) {
      if (layers[l].left() - layers[l].next_block(multiple) < multiple) continue;
      if (best < 0 ||
          layers[l].next_block_mean(multiple) < layers[best].next_block_mean(multiple)) {
        best = static_cast<int64_t>(l);
      }
    }
    if (best < 0) break;
    const int64_t block = layers[best].next_block(multiple);
    if (removed + block - remove > remove - removed) break;  // overshoot beyond the undershoot
    layers[best].removed += block;
    removed += block;
  }
  std::vector<std::vector<bool>> gone = NoneRemoved(scores);
  for (size_t l = 0; l < layers.size(); ++l) {
    for (int64_t k = 0; k < layers[l].removed; ++k) gone[l][layers[l].ascending[k].index] = true;
  }
  return Kept(scores, gone);
}

}  // namespace

int64_t PrunePlan::heads_left() const {
  int64_t n = 0;
  for (const auto& l : keep_heads) n += static_cast<int64_t>(l.size());
  return n;
}

int64_t PrunePlan::ffn_left() const {
  int64_t n = 0;
  for (const auto& l : keep_ffn) n += static_cast<int64_t>(l.size());
  return n;
}

absl::StatusOr<PrunePlan> PlanPruning(const models::EncoderConfig& config,
                                      const UnitImportance& importance,
                                      const PruneTargets& targets) {
  for (const auto& [name, share] :
       {std::pair<const char*, double>{"heads", targets.heads}, {"ffn", targets.ffn}}) {
    if (!(share >= 0.0 && share < 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("prune targets: the ", name, " share must be in [0, 1), got ", share));
    }
  }
  if (targets.ffn_multiple < 1) {
    return absl::InvalidArgumentError("prune targets: ffn_multiple must be positive");
  }
  const int64_t layers = config.layers();
  if (static_cast<int64_t>(importance.heads.size()) != layers ||
      static_cast<int64_t>(importance.ffn.size()) != layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prune plan: scores for ", importance.heads.size(), " layers, the model has ", layers));
  }
  for (int64_t l = 0; l < layers; ++l) {
    if (static_cast<int64_t>(importance.heads[l].size()) != config.heads_in_layer(l) ||
        static_cast<int64_t>(importance.ffn[l].size()) != config.ffn_in_layer(l)) {
      return absl::InvalidArgumentError(
          absl::StrCat("prune plan: layer ", l, " has scores for ", importance.heads[l].size(),
                       " heads and ", importance.ffn[l].size(), " FFN neurons, the model ",
                       config.heads_in_layer(l), " and ", config.ffn_in_layer(l)));
    }
  }
  PrunePlan plan;
  plan.keep_heads =
      PlanHeads(importance.heads,
                StillToRemove(targets.heads, layers * config.heads(), Total(importance.heads)));
  plan.keep_ffn = PlanFfn(importance.ffn,
                          StillToRemove(targets.ffn, layers * config.ffn(), Total(importance.ffn)),
                          targets.ffn_multiple);
  return plan;
}

}  // namespace padless::prune
