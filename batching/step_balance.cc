#include "step_balance.h"

#include <algorithm>
#include <cstdlib>

namespace padless::batching::internal {

namespace {

// The sequence of `from` whose length is closest to `gap` / 2 among those shorter than `gap`
// (moving it brings the two batches closest together); false when none is.
bool PickSequence(const BatchSpec& from, int64_t gap, size_t& row, size_t& pos) {
  int64_t best = -1;
  for (size_t r = 0; r < from.rows.size(); ++r) {
    for (size_t p = 0; p < from.rows[r].size(); ++p) {
      const int64_t len = from.rows[r][p].length;
      if (len <= 0 || len >= gap) continue;
      if (best < 0 || std::llabs(2 * len - gap) < std::llabs(2 * best - gap)) {
        best = len;
        row = r;
        pos = p;
      }
    }
  }
  return best > 0;
}

void Move(BatchSpec& from, size_t row, size_t pos, BatchSpec& to) {
  const Placement piece = from.rows[row][pos];
  from.rows[row].erase(from.rows[row].begin() + pos);
  if (from.rows[row].empty() && from.rows.size() > 1) from.rows.erase(from.rows.begin() + row);
  if (to.rows.empty()) to.rows.emplace_back();
  to.rows.back().push_back(piece);
  from.length -= piece.length;
  to.length += piece.length;
}

}  // namespace

void BalanceVarlenStep(std::vector<BatchSpec>& step, int64_t max_sentences) {
  if (step.size() < 2) return;
  for (const BatchSpec& b : step) {
    if (b.layout != Layout::kVarlen) return;
  }
  // Each move shrinks the gap between the heaviest and the lightest batch; the bound only guards
  // against a pathological plan.
  for (int moves = 0; moves < 4096; ++moves) {
    auto [lo, hi] = std::minmax_element(step.begin(), step.end(), [](const auto& a, const auto& b) {
      return a.real_tokens() < b.real_tokens();
    });
    const int64_t gap = hi->real_tokens() - lo->real_tokens();
    if (gap * 100 <= hi->real_tokens()) return;  // within 1%
    if (max_sentences > 0 && lo->num_sequences() >= max_sentences) return;
    size_t row = 0, pos = 0;
    if (hi->num_sequences() < 2 || !PickSequence(*hi, gap, row, pos)) return;
    Move(*hi, row, pos, *lo);
  }
}

}  // namespace padless::batching::internal
