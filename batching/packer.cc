#include "padless/batching/packer.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::batching {
namespace {

// A set of free-space values in [0, capacity] with "smallest value >= x" in a few word scans:
// a bit per value plus a summary bit per 64-bit word. Best-fit needs exactly this query.
class FreeSpaceSet {
 public:
  explicit FreeSpaceSet(int64_t capacity)
      : words_((capacity + 64) / 64, 0), summary_((words_.size() + 63) / 64, 0) {}

  void Insert(int64_t v) {
    const size_t w = static_cast<size_t>(v) >> 6;
    words_[w] |= uint64_t{1} << (v & 63);
    summary_[w >> 6] |= uint64_t{1} << (w & 63);
  }
  void Erase(int64_t v) {
    const size_t w = static_cast<size_t>(v) >> 6;
    words_[w] &= ~(uint64_t{1} << (v & 63));
    if (words_[w] == 0) summary_[w >> 6] &= ~(uint64_t{1} << (w & 63));
  }
  // Smallest member >= v, or -1.
  int64_t LowerBound(int64_t v) const {
    size_t w = static_cast<size_t>(v) >> 6;
    if (w >= words_.size()) return -1;
    const uint64_t here = words_[w] & (~uint64_t{0} << (v & 63));
    if (here != 0) return static_cast<int64_t>((w << 6) + __builtin_ctzll(here));
    ++w;
    size_t s = w >> 6;
    if (s >= summary_.size()) return -1;
    uint64_t bits = (w & 63) == 0 ? summary_[s] : summary_[s] & (~uint64_t{0} << (w & 63));
    while (bits == 0) {
      if (++s >= summary_.size()) return -1;
      bits = summary_[s];
    }
    const size_t word = (s << 6) + __builtin_ctzll(bits);
    return static_cast<int64_t>((word << 6) + __builtin_ctzll(words_[word]));
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;
};

// Indices of `lengths` in decreasing length order, ties in input order (a stable counting sort:
// lengths are bounded by the capacity).
std::vector<int64_t> DecreasingOrder(absl::Span<const int64_t> lengths, int64_t capacity) {
  std::vector<int64_t> start(capacity + 2, 0);
  for (int64_t len : lengths) ++start[capacity - len + 1];
  for (int64_t i = 1; i < capacity + 2; ++i) start[i] += start[i - 1];
  std::vector<int64_t> order(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    order[start[capacity - lengths[i]]++] = static_cast<int64_t>(i);
  }
  return order;
}

absl::Status Validate(absl::Span<const int64_t> lengths, const PackOptions& options) {
  if (options.capacity < 1 || options.capacity > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PackOptions.capacity: must be in [1, 2^30], got ", options.capacity));
  }
  if (options.max_sequences_per_row < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PackOptions.max_sequences_per_row: must be >= 0, got ", options.max_sequences_per_row));
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1 || lengths[i] > options.capacity) {
      return absl::InvalidArgumentError(absl::StrCat("pack: piece ", i, " has length ", lengths[i],
                                                     ", outside [1, capacity=", options.capacity,
                                                     "]"));
    }
  }
  return absl::OkStatus();
}

// Row index of every piece (rows numbered in opening order) and the number of rows.
struct Assignment {
  std::vector<int64_t> row_of;  // per input piece
  int64_t rows = 0;
};

// First fit decreasing: the open rows grouped by free space, a min-heap of row ids per free-space
// value, and a min segment tree over the free-space values [0, capacity] holding each heap's
// smallest row. The first (leftmost) row that fits a piece of length n is the tree's minimum over
// [n, capacity]: O(log capacity + log rows) per piece, independent of how many rows are open.
Assignment FirstFitDecreasing(absl::Span<const int64_t> lengths, const PackOptions& options) {
  const int64_t cap = options.capacity;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  Assignment a;
  a.row_of.assign(lengths.size(), -1);
  size_t leaves = 1;
  while (leaves < static_cast<size_t>(cap) + 1) leaves <<= 1;
  std::vector<int64_t> tree(2 * leaves, kNone);
  using MinHeap = std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>>;
  std::vector<MinHeap> rows_with_free(cap + 1);
  std::vector<int64_t> free_of;
  std::vector<int32_t> seqs;
  auto refresh = [&](int64_t f) {
    size_t node = leaves + static_cast<size_t>(f);
    tree[node] = rows_with_free[f].empty() ? kNone : rows_with_free[f].top();
    for (node >>= 1; node >= 1; node >>= 1)
      tree[node] = std::min(tree[2 * node], tree[2 * node + 1]);
  };
  auto leftmost_fit = [&](int64_t len) {  // min over leaves [len, cap]
    int64_t best = kNone;
    for (size_t lo = leaves + static_cast<size_t>(len), hi = leaves + static_cast<size_t>(cap) + 1;
         lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) best = std::min(best, tree[lo++]);
      if (hi & 1) best = std::min(best, tree[--hi]);
    }
    return best;
  };
  for (int64_t idx : DecreasingOrder(lengths, cap)) {
    const int64_t len = lengths[idx];
    int64_t row = leftmost_fit(len);
    if (row == kNone) {
      row = a.rows++;
      free_of.push_back(cap);
      seqs.push_back(0);
    } else {
      rows_with_free[free_of[row]].pop();
      refresh(free_of[row]);
    }
    a.row_of[idx] = row;
    free_of[row] -= len;
    ++seqs[row];
    const bool full =
        options.max_sequences_per_row > 0 && seqs[row] >= options.max_sequences_per_row;
    if (free_of[row] > 0 && !full) {
      rows_with_free[free_of[row]].push(row);
      refresh(free_of[row]);
    }
  }
  return a;
}

// Best fit decreasing: open rows grouped by free space (a stack per value) with a FreeSpaceSet
// over the non-empty values; each piece goes to a row with the least free space that still fits.
Assignment BestFitDecreasing(absl::Span<const int64_t> lengths, const PackOptions& options) {
  const size_t n = lengths.size();
  Assignment a;
  a.row_of.assign(n, -1);
  FreeSpaceSet free_set(options.capacity);
  std::vector<std::vector<int64_t>> rows_with_free(options.capacity + 1);
  std::vector<int32_t> seqs;
  for (int64_t idx : DecreasingOrder(lengths, options.capacity)) {
    const int64_t len = lengths[idx];
    const int64_t f = free_set.LowerBound(len);
    int64_t row;
    int64_t free_space;
    if (f < 0) {
      row = a.rows++;
      seqs.push_back(0);
      free_space = options.capacity;
    } else {
      row = rows_with_free[f].back();
      rows_with_free[f].pop_back();
      if (rows_with_free[f].empty()) free_set.Erase(f);
      free_space = f;
    }
    a.row_of[idx] = row;
    free_space -= len;
    ++seqs[row];
    const bool full =
        options.max_sequences_per_row > 0 && seqs[row] >= options.max_sequences_per_row;
    if (free_space > 0 && !full) {
      if (rows_with_free[free_space].empty()) free_set.Insert(free_space);
      rows_with_free[free_space].push_back(row);
    }
  }
  return a;
}

// Histogram packer (SPFHP-like best fit over the length histogram). Identical rows are one
// "strategy" with a multiplicity, so the work grows with the number of distinct row contents, not
// with the number of sequences; pieces are dealt into the strategies' rows at the end.
Assignment HistogramPack(absl::Span<const int64_t> lengths, const PackOptions& options) {
  const int64_t cap = options.capacity;
  std::vector<int64_t> hist(cap + 1, 0);
  for (int64_t len : lengths) ++hist[len];
  struct Strategy {
    std::vector<int32_t> lengths;
    int64_t count;
  };
  std::vector<Strategy> strategies;
  FreeSpaceSet free_set(cap);
  std::vector<std::vector<int32_t>> by_free(cap + 1);  // strategy ids by free space
  auto push = [&](int32_t id, int64_t free_space) {
    const bool full =
        options.max_sequences_per_row > 0 &&
        static_cast<int64_t>(strategies[id].lengths.size()) >= options.max_sequences_per_row;
    if (free_space <= 0 || full) return;
    if (by_free[free_space].empty()) free_set.Insert(free_space);
    by_free[free_space].push_back(id);
  };
  // Item-by-item best fit puts the next piece of length `len` into the row it just used while
  // that row still has room for it, so a row takes q = min(free / len, sequence room) copies at
  // once; the rows of a group are filled one after another.
  const int64_t limit = options.max_sequences_per_row;
  for (int64_t len = cap; len >= 1; --len) {
    int64_t left = hist[len];
    while (left > 0) {
      const int64_t f = free_set.LowerBound(len);
      const int32_t id = f < 0 ? -1 : by_free[f].back();
      const int64_t free_space = f < 0 ? cap : f;
      const int64_t seqs = f < 0 ? 0 : static_cast<int64_t>(strategies[id].lengths.size());
      int64_t q = free_space / len;
      if (limit > 0) q = std::min(q, limit - seqs);
      const int64_t available = f < 0 ? left : strategies[id].count;
      int64_t rows;
      if (left >= q) {
        rows = std::min(available, left / q);
      } else {
        rows = 1;
        q = left;
      }
      Strategy extended{f < 0 ? std::vector<int32_t>{} : strategies[id].lengths, rows};
      extended.lengths.insert(extended.lengths.end(), q, static_cast<int32_t>(len));
      if (f >= 0) {
        strategies[id].count -= rows;
        if (strategies[id].count == 0) {
          by_free[f].pop_back();
          if (by_free[f].empty()) free_set.Erase(f);
        }
      }
      strategies.push_back(std::move(extended));
      push(static_cast<int32_t>(strategies.size() - 1), free_space - q * len);
      left -= rows * q;
    }
  }
  // Deal the pieces: for each length, the pieces of that length in input order.
  std::vector<int64_t> cursor(cap + 2, 0);
  for (int64_t len = cap; len >= 1; --len) cursor[len - 1] = cursor[len] + hist[len];
  // cursor[len] is now the start, in decreasing order, of the pieces of length len.
  std::vector<int64_t> order = DecreasingOrder(lengths, cap);
  Assignment a;
  a.row_of.assign(lengths.size(), -1);
  for (const Strategy& s : strategies) {
    for (int64_t c = 0; c < s.count; ++c) {
      const int64_t row = a.rows++;
      for (int32_t len : s.lengths) a.row_of[order[cursor[len]++]] = row;
    }
  }
  return a;
}

absl::StatusOr<Assignment> Assign(absl::Span<const int64_t> lengths, const PackOptions& options) {
  if (absl::Status s = Validate(lengths, options); !s.ok()) return s;
  switch (options.algorithm) {
    case PackAlgorithm::kFirstFitDecreasing:
      return FirstFitDecreasing(lengths, options);
    case PackAlgorithm::kBestFitDecreasing:
      return BestFitDecreasing(lengths, options);
    case PackAlgorithm::kHistogram:
      return HistogramPack(lengths, options);
  }
  return absl::InvalidArgumentError("PackOptions.algorithm: unknown value");
}

}  // namespace

absl::StatusOr<std::vector<std::vector<Placement>>> Pack(absl::Span<const Placement> pieces,
                                                         const PackOptions& options) {
  std::vector<int64_t> lengths(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) lengths[i] = pieces[i].length;
  absl::StatusOr<Assignment> a = Assign(lengths, options);
  if (!a.ok()) return a.status();
  // Exact-size rows (one allocation each), filled in decreasing length order so each row lists
  // its pieces longest first.
  std::vector<int32_t> sizes(a->rows, 0);
  for (int64_t row : a->row_of) ++sizes[row];
  std::vector<std::vector<Placement>> rows(a->rows);
  for (int64_t r = 0; r < a->rows; ++r) rows[r].reserve(sizes[r]);
  for (int64_t idx : DecreasingOrder(lengths, options.capacity)) {
    rows[a->row_of[idx]].push_back(pieces[idx]);
  }
  return rows;
}

absl::StatusOr<int64_t> CountPackedRows(absl::Span<const int64_t> lengths,
                                        const PackOptions& options) {
  absl::StatusOr<Assignment> a = Assign(lengths, options);
  if (!a.ok()) return a.status();
  return a->rows;
}

}  // namespace padless::batching
