#include "epoch_builder.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/types/span.h"
#include "padless/batching/packer.h"

namespace padless::batching::internal {

absl::StatusOr<std::vector<BatchSpec>> EpochBuilder::Build(std::vector<Placement> pieces,
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

int64_t EpochBuilder::PadLength(int64_t longest, int64_t boundary) const {
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

BatchSpec EpochBuilder::PaddedBatch(const Placement* first, size_t n, int bucket,
                                    int64_t boundary) const {
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

std::vector<BatchSpec> EpochBuilder::Chunked(const std::vector<Placement>& pieces, int bucket,
                                             int64_t size, int64_t boundary) {
  std::vector<BatchSpec> out;
  for (size_t i = 0; i < pieces.size(); i += size) {
    const size_t n = std::min<size_t>(size, pieces.size() - i);
    if (o_.drop_last() && static_cast<int64_t>(n) < size) break;
    out.push_back(PaddedBatch(&pieces[i], n, bucket, boundary));
  }
  return out;
}

std::vector<BatchSpec> EpochBuilder::SortedMegabatches(std::vector<Placement> pieces) {
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

void EpochBuilder::BudgetBatches(const std::vector<Placement>& pieces, int bucket, int64_t boundary,
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
    const bool over =
        (n + 1) * width > o_.max_tokens() || (o_.max_sentences() > 0 && n + 1 > o_.max_sentences());
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

std::vector<BatchSpec> EpochBuilder::TokenBudget(std::vector<Placement> pieces) {
  // Sorted by length; the shuffle before the stable sort breaks ties differently every epoch.
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Placement& a, const Placement& b) { return a.length < b.length; });
  std::vector<BatchSpec> out;
  BudgetBatches(pieces, -1, 0, &out);
  return out;
}

std::vector<BatchSpec> EpochBuilder::Bucketed(const std::vector<Placement>& pieces,
                                              const Boundaries& bounds) {
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

absl::StatusOr<std::vector<BatchSpec>> EpochBuilder::Packed(const std::vector<Placement>& pieces) {
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

}  // namespace padless::batching::internal
