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

// One piece of an example placed in a row: the example's first `lead` tokens, then tokens
// [start, start + length - lead - tail), then the example's last `tail` tokens. An example that
// fits is {start 0, length = its length}. A truncated one keeps its head and its end ([SEP], or a
// head+tail cut: `tail` > 0). A window of a split example keeps the example's [CLS] (`lead` 1)
// and [SEP] (`tail` 1) around its slice of the content, as Tokenizer::EncodeWindows builds it.
struct Placement {
  int64_t example = 0;
  int64_t start = 0;   // first token of the middle part
  int64_t length = 0;  // tokens of this piece
  int64_t tail = 0;    // of `length`, how many come from the end of the example
  int64_t lead = 0;    // of `length`, how many come from the start of the example

  // The example token at position i of this piece, for an example of `example_length` tokens.
  int64_t SourceIndex(int64_t i, int64_t example_length) const {
    if (i < lead) return i;
    if (i < length - tail) return start + (i - lead);
    return example_length - length + i;
  }
  // Whether the piece lies inside an example of `example_length` tokens.
  bool FitsExample(int64_t example_length) const {
    return length >= 1 && start >= 0 && lead >= 0 && tail >= 0 && lead + tail <= length &&
           lead <= start && start + (length - lead - tail) <= example_length - tail;
  }

  bool operator==(const Placement& o) const {
    return example == o.example && start == o.start && length == o.length && tail == o.tail &&
           lead == o.lead;
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
