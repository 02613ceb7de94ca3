#include "run_config.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "padless/base/enum_names.h"
#include "padless/batching/strategy_registry.h"
#include "padless/models/recompute.h"

namespace padless::bench::e2e {
namespace {

// The enum is the bench's own handle (colours, the dense-attention choice); its names are the
// registry's e2e strategies (padless/batching/strategy_registry.h), which hold the planner options.
constexpr base::EnumName<Strategy> kStrategies[] = {
    {"pad_to_max", Strategy::kPadToMax},
    {"pad_longest", Strategy::kPadLongest},
    {"hf_group_by_length", Strategy::kHfGroupByLength},
    {"token_budget_buckets", Strategy::kTokenBudgetBuckets},
    {"packed_dense", Strategy::kPackedDense},
    {"packed_varlen", Strategy::kPackedVarlen},
};
constexpr base::EnumName<Precision> kPrecisions[] = {
    {"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}, {"fp8", Precision::kFp8}};

std::vector<std::string> Items(absl::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(item));
  }
  return out;
}

// Canonical policy texts ("every:1" and "all" are one configuration).
absl::StatusOr<std::vector<std::string>> ParsePolicies(absl::string_view flag,
                                                       absl::string_view list) {
  std::vector<std::string> out;
  for (const std::string& item : Items(list)) {
    absl::StatusOr<models::CheckpointPolicy> policy = models::CheckpointPolicy::Parse(item);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", policy.status().message()));
    }
    out.push_back(policy->ToString());
  }
  return out;
}

absl::StatusOr<std::vector<Strategy>> ParseStrategies(absl::string_view flag,
                                                      absl::string_view list) {
  std::vector<Strategy> out;
  for (const std::string& item : Items(list)) {
    if (item == "all") {
      for (Strategy s : AllStrategies()) out.push_back(s);
      continue;
    }
    absl::StatusOr<Strategy> s = ParseStrategy(item);
    if (!s.ok())
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", s.status().message()));
    out.push_back(*s);
  }
  return out;
}

}  // namespace

std::string StrategyName(Strategy s) { return std::string(base::EnumToName(s, kStrategies)); }

absl::StatusOr<Strategy> ParseStrategy(absl::string_view name) {
  return base::ParseEnum("strategy", name, kStrategies);
}

std::vector<Strategy> AllStrategies() {
  std::vector<Strategy> out;
  for (const base::EnumName<Strategy>& e : kStrategies) out.push_back(e.value);
  return out;
}

std::string PrecisionName(Precision p) { return std::string(base::EnumToName(p, kPrecisions)); }

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  return base::ParseEnum("precision", name, kPrecisions);
}

std::string RunConfig::Name() const {
  return absl::StrCat(StrategyName(strategy), "/", PrecisionName(precision), "/ckpt_", checkpoint,
                      generic_layers ? "/generic_layers" : "");
}

absl::StatusOr<std::vector<RunConfig>> ExpandConfigs(absl::string_view strategies,
                                                     absl::string_view precisions,
                                                     absl::string_view checkpoints,
                                                     absl::string_view fp32_extra,
                                                     absl::string_view generic_layer_checkpoints) {
  absl::StatusOr<std::vector<Strategy>> main = ParseStrategies("strategies", strategies);
  if (!main.ok()) return main.status();
  absl::StatusOr<std::vector<Strategy>> extra = ParseStrategies("fp32_strategies", fp32_extra);
  if (!extra.ok()) return extra.status();
  std::vector<Precision> precs;
  for (const std::string& item : Items(precisions)) {
    absl::StatusOr<Precision> p = ParsePrecision(item);
    if (!p.ok())
      return absl::InvalidArgumentError(absl::StrCat("--precisions: ", p.status().message()));
    precs.push_back(*p);
  }
  absl::StatusOr<std::vector<std::string>> ckpts = ParsePolicies("checkpoint", checkpoints);
  if (!ckpts.ok()) return ckpts.status();
  absl::StatusOr<std::vector<std::string>> generic_ckpts =
      ParsePolicies("generic_layers_checkpoint", generic_layer_checkpoints);
  if (!generic_ckpts.ok()) return generic_ckpts.status();
  std::vector<RunConfig> out;
  auto add = [&out](const RunConfig& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  // Precision outermost: configurations of one precision run back to back. FP8 GEMMs run only in
  // the fused varlen layer: an fp8 row for another layout would time bf16 under FP8's name.
  for (Precision p : precs) {
    for (const std::string& c : *ckpts) {
      for (Strategy s : *main) {
        if (p != Precision::kFp8 || s == Strategy::kPackedVarlen) add(RunConfig{s, p, c});
      }
    }
  }
  for (Strategy s : *extra) add(RunConfig{s, Precision::kFp32, "none"});
  for (const std::string& c : *generic_ckpts) {
    add(RunConfig{Strategy::kPackedVarlen, Precision::kBf16, c, /*generic_layers=*/true});
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "no configuration selected (--strategies, --precisions, --checkpoint, --fp32_strategies)");
  }
  return out;
}

batching::PlannerOptions PlannerOptionsFor(Strategy strategy, int64_t budget, int64_t max_len,
                                           uint64_t seed) {
  batching::StrategySizes sizes;
  sizes.max_len = max_len;
  sizes.batch_size = std::max<int64_t>(1, budget / max_len);
  sizes.max_tokens = budget;
  sizes.seed = seed;
  // Every Strategy is a registered e2e name (StrategyRegistryTest checks it).
  return *batching::LookupStrategy(StrategyName(strategy), sizes);
}

ModelShape ModelShape::Of(const models::EncoderConfig& c) {
  ModelShape shape;
  const int64_t ffn_in = c.modernbert() ? 2 : 1;  // GeGLU: value and gate rows
  for (int64_t l = 0; l < c.layers(); ++l) {
    const int64_t a = c.heads_in_layer(l) * c.head_dim();
    shape.matmul_params += 4 * c.hidden() * a + (ffn_in + 1) * c.hidden() * c.ffn_in_layer(l);
    const int64_t window = c.attention_window(l);
    if (window < 0) {
      shape.attention_width += a;
    } else {
      shape.windowed_attention_width += a;
      shape.half_window = window;
    }
  }
  return shape;
}

namespace {

// Keys summed over the queries of a `len`-token sequence under a +-w window: each query sees
// itself and up to w keys on each side, clipped to the sequence.
double WindowedKeys(int64_t len, int64_t w) {
  // sum over i < len of min(i, w): the keys on one side; both sides are alike.
  const int64_t n = len - 1;
  const double one_side = n <= w ? 0.5 * static_cast<double>(n) * static_cast<double>(n + 1)
                                 : 0.5 * static_cast<double>(w) * static_cast<double>(w + 1) +
                                       static_cast<double>(w) * static_cast<double>(n - w);
  return static_cast<double>(len) + 2.0 * one_side;
}

}  // namespace

double ForwardFlops(int64_t len, const ModelShape& shape) {
  const double l = static_cast<double>(len);
  const double windowed =
      shape.windowed_attention_width > 0
          ? 4.0 * WindowedKeys(len, shape.half_window) *
                static_cast<double>(shape.windowed_attention_width)
          : 0.0;
  return l * (2.0 * static_cast<double>(shape.MatmulParams()) +
              4.0 * l * static_cast<double>(shape.attention_width)) +
         windowed;
}

double TrainingFlops(const std::vector<batching::BatchSpec>& specs, const ModelShape& shape) {
  double forward = 0;
  for (const batching::BatchSpec& spec : specs) {
    for (const std::vector<batching::Placement>& row : spec.rows) {
      for (const batching::Placement& p : row) forward += ForwardFlops(p.length, shape);
    }
  }
  return 3.0 * forward;
}

}  // namespace padless::bench::e2e
