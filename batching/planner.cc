#include "padless/batching/planner.h"

#include "step_balance.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::batching {
namespace {

// SplitMix64: tiny, fast and identical on every platform (std's distributions are not), so a plan
// is reproducible across compilers and machines.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the tiny bias is irrelevant for shuffling).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

// Independent streams for the epoch's sample order and its batch order.
Rng StreamRng(uint64_t seed, int64_t epoch, uint64_t stream) {
  Rng mix(seed ^ (0xD1B54A32D192ED03ULL * (static_cast<uint64_t>(epoch) + 1)) ^
          (0x8CB92BA72F3D8DD7ULL * (stream + 1)));
  return Rng(mix.Next());
}

absl::Status InvalidOption(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("PlannerOptions.", field, ": ", why));
}

absl::Status ValidateOptions(const PlannerOptions& o) {
  // [CLS], one content token and [SEP].
  if (o.max_len() < 3)
    return InvalidOption("max_len", absl::StrCat("must be >= 3, got ", o.max_len()));
  if (!(o.head_fraction() >= 0 && o.head_fraction() <= 1)) {
    return InvalidOption("head_fraction",
                         absl::StrCat("must be in [0, 1], got ", o.head_fraction()));
  }
  if (o.window_stride() < 0 || o.window_stride() >= o.max_len() - 2) {
    return InvalidOption("window_stride",
                         absl::StrCat("must be in [0, max_len - 2), got ", o.window_stride()));
  }
  if (o.batch_size() < 1) {
    return InvalidOption("batch_size", absl::StrCat("must be >= 1, got ", o.batch_size()));
  }
  if (o.max_tokens() < 0) {
    return InvalidOption("max_tokens", absl::StrCat("must be >= 0, got ", o.max_tokens()));
  }
  if (o.max_sentences() < 0) {
    return InvalidOption("max_sentences", absl::StrCat("must be >= 0, got ", o.max_sentences()));
  }
  if (o.batch_size_multiple() < 1) {
    return InvalidOption("batch_size_multiple",
                         absl::StrCat("must be >= 1, got ", o.batch_size_multiple()));
  }
  if (o.megabatch_factor() < 1) {
    return InvalidOption("megabatch_factor",
                         absl::StrCat("must be >= 1, got ", o.megabatch_factor()));
  }
  if (o.pad_multiple() < 1) {
    return InvalidOption("pad_multiple", absl::StrCat("must be >= 1, got ", o.pad_multiple()));
  }
  if (o.num_buckets() < 1) {
    return InvalidOption("num_buckets", absl::StrCat("must be >= 1, got ", o.num_buckets()));
  }
  if (o.max_sequences_per_row() < 0) {
    return InvalidOption("max_sequences_per_row",
                         absl::StrCat("must be >= 0, got ", o.max_sequences_per_row()));
  }
  if (o.pack_window() < 0) {
    return InvalidOption("pack_window", absl::StrCat("must be >= 0, got ", o.pack_window()));
  }
  if (o.pad_to() == PadTo::kBucketBoundary && o.sampler() != Sampler::kBucketed) {
    return InvalidOption("pad_to", "kBucketBoundary needs the kBucketed sampler");
  }
  const bool needs_budget =
      o.sampler() == Sampler::kTokenBudget ||
      (o.sampler() == Sampler::kPacked && o.packed_layout() == Layout::kVarlen);
  if (needs_budget && o.max_tokens() == 0) {
    return InvalidOption("max_tokens", "this sampler needs a token budget (> 0)");
  }
  if (o.max_tokens() > 0 && o.max_tokens() < o.max_len() && o.sampler() != Sampler::kRandom &&
      o.sampler() != Sampler::kSortedMegabatch) {
    return InvalidOption("max_tokens",
                         absl::StrCat("a budget of ", o.max_tokens(),
                                      " cannot hold one sequence of max_len ", o.max_len()));
  }
  if (o.sampler() == Sampler::kPacked && o.packed_layout() == Layout::kPadded) {
    return InvalidOption("packed_layout", "must be kPacked or kVarlen");
  }
  return absl::OkStatus();
}

class EpochBuilder {
 public:
  EpochBuilder(const PlannerOptions& o, int64_t epoch)
      : o_(o),
        order_rng_(StreamRng(o.seed(), epoch, 0)),
        batch_rng_(StreamRng(o.seed(), epoch, 1)) {}

  absl::StatusOr<std::vector<BatchSpec>> Build(std::vector<Placement> pieces,
                                               const Boundaries& boundaries) {
    order_rng_.Shuffle(pieces);
    std::vector<BatchSpec> batches;
    switch (o_.sampler()) {
      case Sampler::kRandom:
        batches = Chunked(pieces, -1, o_.batch_size());
        break;
      case Sampler::kSortedMegabatch:
        batches = SortedMegabatches(std::move(pieces));
        break;
      case Sampler::kBucketed:
        batches = Bucketed(pieces, boundaries);
        break;
      case Sampler::kTokenBudget:
        batches = TokenBudget(std::move(pieces));
        break;
      case Sampler::kPacked: {
        absl::StatusOr<std::vector<BatchSpec>> packed = Packed(pieces);
        if (!packed.ok()) return packed.status();
        batches = std::move(*packed);
        break;
      }
    }
    return batches;
  }

  // Padded row length for a batch whose longest sequence is `longest`.
  int64_t PadLength(int64_t longest, int64_t boundary) const {
    switch (o_.pad_to()) {
      case PadTo::kLongest:
        return longest;
      case PadTo::kMaxLength:
        return o_.max_len();
      case PadTo::kMultiple: {
        const int64_t m = o_.pad_multiple();
        return std::max(longest, std::min((longest + m - 1) / m * m, o_.max_len()));
      }
      case PadTo::kBucketBoundary:
        // Explicit boundaries may lie beyond max_len (the last bucket only has to hold the
        // longest piece); rows never do, or the model would see positions past max_len.
        return boundary > 0 ? std::min(boundary, o_.max_len()) : longest;
    }
    return longest;
  }

  BatchSpec PaddedBatch(const Placement* first, size_t n, int bucket, int64_t boundary) const {
    BatchSpec b;
    b.layout = Layout::kPadded;
    b.bucket = bucket;
    b.rows.reserve(n);
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      b.rows.push_back({first[i]});
      longest = std::max(longest, first[i].length);
    }
    b.length = PadLength(longest, boundary);
    return b;
  }

 private:
  std::vector<BatchSpec> Chunked(const std::vector<Placement>& pieces, int bucket, int64_t size,
                                 int64_t boundary = 0) {
    std::vector<BatchSpec> out;
    for (size_t i = 0; i < pieces.size(); i += size) {
      const size_t n = std::min<size_t>(size, pieces.size() - i);
      if (o_.drop_last() && static_cast<int64_t>(n) < size) break;
      out.push_back(PaddedBatch(&pieces[i], n, bucket, boundary));
    }
    return out;
  }

  // HF group_by_length: megabatches of megabatch_factor * batch_size shuffled sequences, each
  // sorted by length (longest first) and cut into batches; batches are then shuffled.
  std::vector<BatchSpec> SortedMegabatches(std::vector<Placement> pieces) {
    const size_t mega = static_cast<size_t>(o_.megabatch_factor() * o_.batch_size());
    for (size_t i = 0; i < pieces.size(); i += mega) {
      auto end = pieces.begin() + std::min(pieces.size(), i + mega);
      std::stable_sort(pieces.begin() + i, end,
                       [](const Placement& a, const Placement& b) { return a.length > b.length; });
    }
    std::vector<BatchSpec> out;
    for (size_t i = 0; i < pieces.size();) {
      // Batches never straddle megabatches, as in HF.
      const size_t mega_end = std::min(pieces.size(), (i / mega + 1) * mega);
      const size_t n = std::min<size_t>(o_.batch_size(), mega_end - i);
      if (!(o_.drop_last() && static_cast<int64_t>(n) < o_.batch_size())) {
        out.push_back(PaddedBatch(&pieces[i], n, -1, 0));
      }
      i += n;
    }
    return out;
  }

  // Greedy token-budget batching of `pieces` in their order (fairseq batch_by_size): a batch
  // grows while (sequences + 1) * padded width fits max_tokens and max_sentences; a full batch
  // longer than batch_size_multiple is cut to a multiple of it, the rest starts the next batch.
  void BudgetBatches(const std::vector<Placement>& pieces, int bucket, int64_t boundary,
                     std::vector<BatchSpec>* out) const {
    const int64_t mult = o_.batch_size_multiple();
    std::vector<Placement> cur;
    int64_t longest = 0;
    auto emit = [&](size_t n) {
      out->push_back(PaddedBatch(cur.data(), n, bucket, boundary));
      cur.erase(cur.begin(), cur.begin() + n);
      longest = 0;
      for (const Placement& p : cur) longest = std::max(longest, p.length);
    };
    for (const Placement& p : pieces) {
      const int64_t width = PadLength(std::max(longest, p.length), boundary);
      const int64_t n = static_cast<int64_t>(cur.size());
      const bool over = (n + 1) * width > o_.max_tokens() ||
                        (o_.max_sentences() > 0 && n + 1 > o_.max_sentences());
      if (over && n > 0) {
        const int64_t keep = n > mult ? std::max(mult * (n / mult), n % mult) : n;
        emit(static_cast<size_t>(keep));
        // The remainder (< mult sequences) may itself be full with `p`: re-check once more.
        while (!cur.empty()) {
          const int64_t w = PadLength(std::max(longest, p.length), boundary);
          const int64_t m = static_cast<int64_t>(cur.size());
          if ((m + 1) * w <= o_.max_tokens() &&
              (o_.max_sentences() == 0 || m + 1 <= o_.max_sentences()))
            break;
          emit(cur.size());
        }
      }
      cur.push_back(p);
      longest = std::max(longest, p.length);
    }
    if (!cur.empty() && !o_.drop_last()) emit(cur.size());
  }

  std::vector<BatchSpec> TokenBudget(std::vector<Placement> pieces) {
    // Sorted by length; the shuffle before the stable sort breaks ties differently every epoch.
    std::stable_sort(pieces.begin(), pieces.end(),
                     [](const Placement& a, const Placement& b) { return a.length < b.length; });
    std::vector<BatchSpec> out;
    BudgetBatches(pieces, -1, 0, &out);
    return out;
  }

  std::vector<BatchSpec> Bucketed(const std::vector<Placement>& pieces, const Boundaries& bounds) {
    std::vector<std::vector<Placement>> buckets(bounds.size());
    for (const Placement& p : pieces) buckets[BucketOf(bounds, p.length)].push_back(p);
    std::vector<BatchSpec> out;
    for (size_t b = 0; b < buckets.size(); ++b) {
      if (o_.max_tokens() > 0) {
        BudgetBatches(buckets[b], static_cast<int>(b), bounds[b], &out);
      } else {
        for (BatchSpec& s : Chunked(buckets[b], static_cast<int>(b), o_.batch_size(), bounds[b])) {
          out.push_back(std::move(s));
        }
      }
    }
    return out;
  }

  absl::StatusOr<std::vector<BatchSpec>> Packed(const std::vector<Placement>& pieces) {
    const bool varlen = o_.packed_layout() == Layout::kVarlen;
    PackOptions pack;
    pack.capacity = varlen ? o_.max_tokens() : o_.max_len();
    pack.max_sequences_per_row = varlen ? o_.max_sentences() : o_.max_sequences_per_row();
    pack.algorithm = o_.pack_algorithm();
    const size_t window =
        o_.pack_window() > 0 ? static_cast<size_t>(o_.pack_window()) : pieces.size();
    std::vector<std::vector<Placement>> rows;
    for (size_t i = 0; i < pieces.size(); i += window) {
      const size_t n = std::min(window, pieces.size() - i);
      absl::StatusOr<std::vector<std::vector<Placement>>> packed =
          Pack(absl::MakeConstSpan(pieces.data() + i, n), pack);
      if (!packed.ok()) return packed.status();
      for (auto& row : *packed) rows.push_back(std::move(row));
    }
    // Best/first fit leaves rows ordered by their longest piece; shuffle them so batches mix.
    batch_rng_.Shuffle(rows);
    std::vector<BatchSpec> out;
    if (varlen) {
      out.reserve(rows.size());
      for (auto& row : rows) {
        BatchSpec b;
        b.layout = Layout::kVarlen;
        b.rows.push_back(std::move(row));
        b.length = b.real_tokens();
        out.push_back(std::move(b));
      }
      return out;
    }
    const size_t per_batch =
        o_.max_tokens() > 0
            ? static_cast<size_t>(std::max<int64_t>(1, o_.max_tokens() / o_.max_len()))
            : static_cast<size_t>(o_.batch_size());
    for (size_t i = 0; i < rows.size(); i += per_batch) {
      const size_t n = std::min(per_batch, rows.size() - i);
      BatchSpec b;
      b.layout = Layout::kPacked;
      b.rows.assign(std::make_move_iterator(rows.begin() + i),
                    std::make_move_iterator(rows.begin() + i + n));
      b.length = PadLength(b.longest_row(), 0);
      out.push_back(std::move(b));
    }
    return out;
  }

 public:
  Rng& batch_rng() { return batch_rng_; }

 private:
  const PlannerOptions& o_;
  Rng order_rng_;
  Rng batch_rng_;
};

// Splits `b` into two non-empty batches of the same layout (rows, or pieces for varlen).
std::pair<BatchSpec, BatchSpec> Halve(const BatchSpec& b, const EpochBuilder& builder) {
  BatchSpec lo = b, hi = b;
  if (b.layout == Layout::kVarlen) {
    const auto& pieces = b.rows[0];
    const size_t half = pieces.size() / 2;
    lo.rows[0].assign(pieces.begin(), pieces.begin() + half);
    hi.rows[0].assign(pieces.begin() + half, pieces.end());
    lo.length = lo.real_tokens();
    hi.length = hi.real_tokens();
    return {lo, hi};
  }
  const size_t half = b.rows.size() / 2;
  lo.rows.assign(b.rows.begin(), b.rows.begin() + half);
  hi.rows.assign(b.rows.begin() + half, b.rows.end());
  // A fixed shape stays fixed; a longest-based one shrinks with the half.
  lo.length = std::min(b.length, builder.PadLength(lo.longest_row(), b.length));
  hi.length = std::min(b.length, builder.PadLength(hi.longest_row(), b.length));
  return {lo, hi};
}

size_t Units(const BatchSpec& b) {
  return b.layout == Layout::kVarlen ? b.rows[0].size() : b.rows.size();
}

}  // namespace

absl::StatusOr<std::vector<Placement>> Planner::Pieces(absl::Span<const int64_t> lengths) const {
  if (absl::Status s = ValidateOptions(options_); !s.ok()) return s;
  std::vector<Placement> pieces;
  pieces.reserve(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t len = lengths[i];
    if (len < 1) {
      return absl::InvalidArgumentError(absl::StrCat("planner: example ", i, " has length ", len,
                                                     "; every example needs >= 1 "
                                                     "token (the tokenizer adds [CLS]/[SEP])"));
    }
    AppendPieces(static_cast<int64_t>(i), len, &pieces);
  }
  return pieces;
}

void Planner::AppendPieces(int64_t example, int64_t len, std::vector<Placement>* pieces) const {
  const int64_t max_len = options_.max_len();
  if (len <= max_len) {
    pieces->push_back({example, 0, len, 0});
    return;
  }
  // [CLS] content [SEP]: the content's budget leaves room for both.
  const int64_t content = len - 2;
  const int64_t budget = max_len - 2;
  if (options_.over_long() == OverLong::kTruncate) {
    const tokenize::SingleKeep keep = tokenize::PlanSingle(
        content, budget, options_.truncation(), options_.head_fraction());
    // [CLS] and the head from the start, the tail and [SEP] from the end.
    pieces->push_back({example, 0, 2 + keep.head + keep.tail, keep.tail + 1});
    return;
  }
  for (int64_t start : tokenize::WindowStarts(content, budget, options_.window_stride())) {
    const int64_t n = std::min(budget, content - start);
    pieces->push_back({example, 1 + start, n + 2, /*tail=*/1, /*lead=*/1});
  }
}

absl::StatusOr<Boundaries> Planner::BucketBoundaries(absl::Span<const int64_t> lengths) const {
  absl::StatusOr<std::vector<Placement>> pieces = Pieces(lengths);
  if (!pieces.ok()) return pieces.status();
  std::vector<int64_t> lens(pieces->size());
  int64_t min_len = options_.max_len(), max_len = 1;
  for (size_t i = 0; i < lens.size(); ++i) {
    lens[i] = (*pieces)[i].length;
    min_len = std::min(min_len, lens[i]);
    max_len = std::max(max_len, lens[i]);
  }
  if (lens.empty()) return Boundaries{options_.max_len()};
  switch (options_.bucket_scheme()) {
    case BucketScheme::kExplicit:
      return ExplicitBoundaries(options_.boundaries(), max_len);
    case BucketScheme::kQuantile:
      return QuantileBoundaries(lens, options_.num_buckets());
    case BucketScheme::kGeometric:
      return GeometricBoundaries(min_len, max_len, options_.num_buckets());
    case BucketScheme::kOptimal:
      return OptimalBoundaries(lens, options_.num_buckets());
  }
  return InvalidOption("bucket_scheme", "unknown value");
}

namespace {

// Every rank must take the same number of steps: halves the largest splittable batches until the
// count divides the world size (no example is dropped or repeated). Returns how many it split.
absl::StatusOr<int64_t> SplitUntilDivisible(std::vector<BatchSpec>& batches, size_t world,
                                            EpochBuilder& builder) {
  int64_t splits = 0;
  while (world > 1 && batches.size() % world != 0) {
    size_t pick = batches.size();
    for (size_t i = 0; i < batches.size(); ++i) {
      if (Units(batches[i]) < 2) continue;
      if (pick == batches.size() || batches[i].token_slots() > batches[pick].token_slots())
        pick = i;
    }
    if (pick == batches.size()) {
      return absl::FailedPreconditionError(absl::StrCat("planner: ", batches.size(),
                                                        " batches cannot be shared evenly by ",
                                                        world, " ranks (too few sequences)"));
    }
    auto [lo, hi] = Halve(batches[pick], builder);
    batches[pick] = std::move(lo);
    batches.push_back(std::move(hi));
    ++splits;
  }
  return splits;
}

// Which batches form each step: sorted by cost (token slots), consecutive groups of `world` form
// one step, so that every rank of a step gets similar work. One rank keeps the sampler's order.
std::vector<size_t> BatchesByCost(const std::vector<int64_t>& cost, size_t world) {
  std::vector<size_t> by_cost(cost.size());
  std::iota(by_cost.begin(), by_cost.end(), 0);
  if (world > 1) {
    std::stable_sort(by_cost.begin(), by_cost.end(),
                     [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  }
  return by_cost;
}

// The steps in a shuffled order; with longest_first, the costliest step first (an out-of-memory
// error then shows at once, not hours into the epoch).
std::vector<size_t> StepOrder(const std::vector<int64_t>& cost, const std::vector<size_t>& by_cost,
                              size_t world, bool longest_first, EpochBuilder& builder) {
  const size_t steps = by_cost.size() / world;
  std::vector<size_t> order(steps);
  std::iota(order.begin(), order.end(), 0);
  builder.batch_rng().Shuffle(order);
  if (!longest_first || steps < 2) return order;
  auto step_cost = [&](size_t s) {
    int64_t c = 0;
    for (size_t j = 0; j < world; ++j) c = std::max(c, cost[by_cost[s * world + j]]);
    return c;
  };
  size_t top = 0;
  for (size_t i = 1; i < steps; ++i) {
    if (step_cost(order[i]) > step_cost(order[top])) top = i;
  }
  std::swap(order[0], order[top]);
  return order;
}

// Deals each step's batches to the ranks, the heaviest to the rank with the least work so far,
// and reports the imbalance per step and over the epoch.
void DealSteps(std::vector<BatchSpec>& batches, const std::vector<size_t>& by_cost,
               const std::vector<size_t>& step_order, size_t world, int64_t max_sentences,
               EpochPlan* plan) {
  plan->ranks.assign(world, {});
  for (auto& r : plan->ranks) r.reserve(step_order.size());
  std::vector<int64_t> total(world, 0);
  double step_imbalance_sum = 0;
  std::vector<size_t> ranks_by_total(world);
  for (size_t s : step_order) {
    std::iota(ranks_by_total.begin(), ranks_by_total.end(), 0);
    std::stable_sort(ranks_by_total.begin(), ranks_by_total.end(),
                     [&](size_t a, size_t b) { return total[a] < total[b]; });
    std::vector<BatchSpec> step(world);
    for (size_t j = 0; j < world; ++j) step[j] = std::move(batches[by_cost[s * world + j]]);
    if (world > 1) internal::BalanceVarlenStep(step, max_sentences);
    int64_t step_max = 0, step_sum = 0;
    for (size_t j = 0; j < world; ++j) {
      const int64_t c = step[j].token_slots();
      const size_t rank = ranks_by_total[j];
      total[rank] += c;
      step_max = std::max(step_max, c);
      step_sum += c;
      plan->ranks[rank].push_back(std::move(step[j]));
    }
    if (step_sum > 0) step_imbalance_sum += static_cast<double>(step_max) * world / step_sum - 1;
  }
  const size_t steps = step_order.size();
  plan->report.steps = static_cast<int64_t>(steps);
  plan->report.step_imbalance = steps == 0 ? 0 : step_imbalance_sum / steps;
  const int64_t total_sum = std::accumulate(total.begin(), total.end(), int64_t{0});
  const int64_t total_max = *std::max_element(total.begin(), total.end());
  plan->report.total_imbalance =
      total_sum == 0 ? 0 : static_cast<double>(total_max) * world / total_sum - 1;
}

}  // namespace

absl::StatusOr<EpochPlan> Planner::PlanEpoch(absl::Span<const int64_t> lengths, int64_t epoch,
                                             int world_size) const {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("planner: world_size must be >= 1, got ", world_size));
  }
  if (epoch < 0)
    return absl::InvalidArgumentError(absl::StrCat("planner: epoch must be >= 0, got ", epoch));
  absl::StatusOr<std::vector<Placement>> pieces = Pieces(lengths);
  if (!pieces.ok()) return pieces.status();
  Boundaries boundaries;
  if (options_.sampler() == Sampler::kBucketed) {
    absl::StatusOr<Boundaries> b = BucketBoundaries(lengths);
    if (!b.ok()) return b.status();
    boundaries = std::move(*b);
  }
  EpochBuilder builder(options_, epoch);
  absl::StatusOr<std::vector<BatchSpec>> batches = builder.Build(std::move(*pieces), boundaries);
  if (!batches.ok()) return batches.status();

  const size_t world = static_cast<size_t>(world_size);
  EpochPlan plan;
  absl::StatusOr<int64_t> splits = SplitUntilDivisible(*batches, world, builder);
  if (!splits.ok()) return splits.status();
  plan.report.batches_split = *splits;
  std::vector<int64_t> cost(batches->size());
  for (size_t i = 0; i < batches->size(); ++i) cost[i] = (*batches)[i].token_slots();
  const std::vector<size_t> by_cost = BatchesByCost(cost, world);
  const std::vector<size_t> order =
      StepOrder(cost, by_cost, world, options_.longest_first(), builder);
  DealSteps(*batches, by_cost, order, world, options_.max_sentences(), &plan);
  return plan;
}

absl::StatusOr<std::vector<BatchSpec>> Planner::Plan(absl::Span<const int64_t> lengths,
                                                     int64_t epoch, int rank, int world_size,
                                                     int64_t start_step) const {
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("planner: rank ", rank, " is outside [0, world_size=", world_size, ")"));
  }
  absl::StatusOr<EpochPlan> plan = PlanEpoch(lengths, epoch, world_size);
  if (!plan.ok()) return plan.status();
  std::vector<BatchSpec>& mine = plan->ranks[rank];
  if (start_step < 0 || start_step > static_cast<int64_t>(mine.size())) {
    return absl::OutOfRangeError(absl::StrCat("planner: start_step ", start_step,
                                              " is outside [0, ", mine.size(), "] for epoch ",
                                              epoch));
  }
  mine.erase(mine.begin(), mine.begin() + start_step);
  return std::move(mine);
}

}  // namespace padless::batching
