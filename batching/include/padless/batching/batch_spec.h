// BatchSpec: what one batch holds (example indices) and how it is laid out, without tensors.
// A plan is a std::vector<BatchSpec>: cheap, deterministic and testable on its own.
#ifndef PADLESS_BATCHING_BATCH_SPEC_H_
#define PADLESS_BATCHING_BATCH_SPEC_H_

#include <cstdint>
#include <vector>

namespace padless::batching {

enum class Layout {
  kPadded,  // [rows, length] ids + bool mask, one sequence per row.
  kPacked,  // [rows, length] rows, several sequences per row, cu_seqlens + restarting positions.
  kVarlen,  // flat [total_tokens], cu_seqlens; no padding at all.
};

// One piece of an example placed in a row. Examples longer than a row may be split into several
// windows (`start` > 0); otherwise `start` is 0 and `length` the (possibly truncated) length.
// Truncation that keeps the end of an example (its [SEP], or a head+tail cut) sets `tail`: the
// piece is tokens [start, start + length - tail) followed by the example's last `tail` tokens.
struct Placement {
  int64_t example = 0;
  int64_t start = 0;   // first token of the example that this piece holds
  int64_t length = 0;  // tokens of this piece
  int64_t tail = 0;    // of `length`, how many come from the end of the example

  bool operator==(const Placement& o) const {
    return example == o.example && start == o.start && length == o.length && tail == o.tail;
  }
};

struct BatchSpec {
  Layout layout = Layout::kPadded;
  // kPadded: one entry per row. kPacked: rows[r] lists the pieces of row r, in order.
  // kVarlen: a single "row" holding every piece.
  std::vector<std::vector<Placement>> rows;
  int64_t length = 0;  // padded row length (kPadded, kPacked); total tokens for kVarlen
  // Bucket this batch came from (bucketed samplers), else -1. Informational only.
  int32_t bucket = -1;

  int64_t num_sequences() const;
  int64_t real_tokens() const;
  int64_t token_slots() const;  // rows * length (padded, packed) or total tokens (varlen)
  int64_t longest_row() const;  // most real tokens in one row

  bool operator==(const BatchSpec& o) const {
    return layout == o.layout && length == o.length && rows == o.rows && bucket == o.bucket;
  }
  bool operator!=(const BatchSpec& o) const { return !(*this == o); }
};

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_BATCH_SPEC_H_
