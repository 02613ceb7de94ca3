#include "padless/batching/strategy_registry.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace padless::batching {
namespace {

using Make = PlannerOptions (*)(const StrategySizes&);

struct Definition {
  const char* name;
  StrategyKind kind;
  const char* alias_of;  // nullptr unless kind == kAlias
  Make make;             // nullptr for aliases
};

// --- The standard set: b sequences per batch, or a budget of max(max_tokens, max_len) slots.
PlannerOptions StandardBase(const StrategySizes& s) {
  return PlannerOptions().max_len(s.max_len).batch_size(s.batch_size).seed(s.seed);
}
int64_t Budget(const StrategySizes& s) { return std::max(s.max_tokens, s.max_len); }
PlannerOptions Buckets(const StrategySizes& s, BucketScheme scheme, int64_t buckets) {
  return StandardBase(s)
      .sampler(Sampler::kBucketed)
      .bucket_scheme(scheme)
      .num_buckets(buckets)
      .pad_to(PadTo::kBucketBoundary);
}
PlannerOptions Packed(const StrategySizes& s, PackAlgorithm algorithm) {
  return StandardBase(s).sampler(Sampler::kPacked).max_tokens(Budget(s)).pack_algorithm(algorithm);
}

// --- The e2e benchmark's set: every strategy gets max_tokens slots per step; padded ones take
// batch_size sequences and drop a partial last batch, which would shrink a step's budget.
PlannerOptions E2eBase(const StrategySizes& s) {
  return PlannerOptions().seed(s.seed).max_len(s.max_len);
}
PlannerOptions E2ePadded(const StrategySizes& s, Sampler sampler, PadTo pad_to) {
  return E2eBase(s).drop_last(true).sampler(sampler).batch_size(s.batch_size).pad_to(pad_to);
}
PlannerOptions E2ePacked(const StrategySizes& s, Layout layout) {
  return E2eBase(s).sampler(Sampler::kPacked).packed_layout(layout).max_tokens(s.max_tokens);
}

const Definition kDefinitions[] = {
    {"pad_to_max_len", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return StandardBase(s).pad_to(PadTo::kMaxLength); }},
    {"random_pad_longest", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return StandardBase(s); }},
    {"random_pad_multiple8", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return StandardBase(s).pad_to(PadTo::kMultiple); }},
    {"megabatch_sorted", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return StandardBase(s).sampler(Sampler::kSortedMegabatch); }},
    {"buckets_quantile8", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return Buckets(s, BucketScheme::kQuantile, 8); }},
    {"buckets_optimal8", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return Buckets(s, BucketScheme::kOptimal, 8); }},
    {"token_budget", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) {
       return StandardBase(s)
           .sampler(Sampler::kTokenBudget)
           .max_tokens(Budget(s))
           .pad_to(PadTo::kMultiple);
     }},
    {"buckets_optimal16_budget", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) {
       return Buckets(s, BucketScheme::kOptimal, 16).max_tokens(Budget(s));
     }},
    {"packed_ffd", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return Packed(s, PackAlgorithm::kFirstFitDecreasing); }},
    {"packed_bfd", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return Packed(s, PackAlgorithm::kBestFitDecreasing); }},
    {"packed_histogram", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) { return Packed(s, PackAlgorithm::kHistogram).pack_window(0); }},
    {"varlen_bfd", StrategyKind::kStandard, nullptr,
     [](const StrategySizes& s) {
       return StandardBase(s)
           .sampler(Sampler::kPacked)
           .packed_layout(Layout::kVarlen)
           .max_tokens(Budget(s));
     }},
    {"pad_to_max", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) { return E2ePadded(s, Sampler::kRandom, PadTo::kMaxLength); }},
    {"pad_longest", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) { return E2ePadded(s, Sampler::kRandom, PadTo::kLongest); }},
    {"hf_group_by_length", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) {
       return E2ePadded(s, Sampler::kSortedMegabatch, PadTo::kLongest);
     }},
    // One tensor shape per bucket keeps the caching allocator and the kernels' autotuning warm.
    {"token_budget_buckets", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) {
       return E2eBase(s)
           .sampler(Sampler::kBucketed)
           .max_tokens(s.max_tokens)
           .pad_to(PadTo::kBucketBoundary);
     }},
    {"packed_dense", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) { return E2ePacked(s, Layout::kPacked); }},
    {"packed_varlen", StrategyKind::kE2e, nullptr,
     [](const StrategySizes& s) { return E2ePacked(s, Layout::kVarlen); }},
    {"packed", StrategyKind::kAlias, "packed_bfd", nullptr},
    {"varlen", StrategyKind::kAlias, "varlen_bfd", nullptr},
    {"buckets", StrategyKind::kAlias, "buckets_optimal16_budget", nullptr},
    {"padded", StrategyKind::kAlias, "random_pad_longest", nullptr},
};

const Definition* Find(absl::string_view name) {
  for (const Definition& d : kDefinitions) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

}  // namespace

const std::vector<StrategyEntry>& StrategyEntries() {
  static const std::vector<StrategyEntry>* const entries = [] {
    auto* out = new std::vector<StrategyEntry>();
    for (const Definition& d : kDefinitions) {
      out->push_back({d.name, d.kind, d.alias_of == nullptr ? "" : d.alias_of});
    }
    return out;
  }();
  return *entries;
}

std::vector<std::string> StrategyNames() {
  std::vector<std::string> out;
  for (const StrategyEntry& e : StrategyEntries()) out.push_back(e.name);
  return out;
}

std::vector<std::string> StrategyNames(StrategyKind kind) {
  std::vector<std::string> out;
  for (const StrategyEntry& e : StrategyEntries()) {
    if (e.kind == kind) out.push_back(e.name);
  }
  return out;
}

std::vector<std::string> StandardStrategyNames() { return StrategyNames(StrategyKind::kStandard); }

absl::StatusOr<PlannerOptions> LookupStrategy(absl::string_view name, const StrategySizes& sizes) {
  const Definition* d = Find(name);
  if (d != nullptr && d->kind == StrategyKind::kAlias) d = Find(d->alias_of);
  if (d == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown strategy '", name, "' (known: ", absl::StrJoin(StrategyNames(), ", "), ")"));
  }
  return d->make(sizes);
}

}  // namespace padless::batching
