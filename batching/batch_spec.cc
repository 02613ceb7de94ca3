#include "padless/batching/batch_spec.h"

namespace padless::batching {

int64_t BatchSpec::num_sequences() const {
  int64_t n = 0;
  for (const auto& row : rows) n += static_cast<int64_t>(row.size());
  return n;
}

int64_t BatchSpec::real_tokens() const {
  int64_t n = 0;
  for (const auto& row : rows) {
    for (const Placement& p : row) n += p.length;
  }
  return n;
}

int64_t BatchSpec::token_slots() const {
  if (layout == Layout::kVarlen) return real_tokens();
  return static_cast<int64_t>(rows.size()) * length;
}

int64_t BatchSpec::longest_row() const {
  int64_t best = 0;
  for (const auto& row : rows) {
    int64_t n = 0;
    for (const Placement& p : row) n += p.length;
    best = n > best ? n : best;
  }
  return best;
}

}  // namespace padless::batching
