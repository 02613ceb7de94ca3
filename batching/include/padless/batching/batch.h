// Batch: the tensors of one training or inference step, built by the Collator from a BatchSpec.
// One struct serves every layout so the encoder can choose its attention backend from `layout`.
#ifndef PADLESS_BATCHING_BATCH_H_
#define PADLESS_BATCHING_BATCH_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "padless/batching/batch_spec.h"

namespace padless::batching {

struct Batch {
  Layout layout = Layout::kPadded;

  // kPadded, kPacked: [R, L] int64. kVarlen: [T] int64.
  at::Tensor input_ids;
  // kPadded: [R, L] bool, true on real tokens. kPacked: [R, L] bool, true on real tokens (any
  // sequence). kVarlen: undefined.
  at::Tensor attention_mask;
  // Same shape as input_ids; 0 on padding. Packed and varlen restart at 0 for every sequence.
  at::Tensor position_ids;
  // Same shape as input_ids, int64: token type ids (0/1 for pairs). Undefined when unused.
  at::Tensor token_type_ids;

  // segment_ids (kPacked, kVarlen; undefined for kPadded): same shape as input_ids, int64; the
  // batch-local sequence index of each token, -1 on padding.
  // cu_seqlens (every layout): int32 [n+1] offsets of the sequences in the flattened row-major
  // order of the real tokens (padding slots are excluded: for kPadded and kPacked, cu_seqlens
  // indexes the real tokens gathered by `token_index`), so any batch can feed a varlen kernel.
  at::Tensor segment_ids;
  at::Tensor cu_seqlens;
  int64_t max_seqlen = 0;  // longest sequence of the batch (every layout)
  // kPadded, kPacked: int64 [T_real] positions of the real tokens in the flattened [R*L] grid, so
  // `flat.index_select(0, token_index)` gives the varlen layout without padding. kVarlen:
  // undefined.
  at::Tensor token_index;
  // Every layout: int64 [n, 2]: (row, offset) of each sequence; kVarlen uses row 0 and the offset
  // in the flat tensor; left-padded rows have offset = L - length.
  at::Tensor sequence_location;

  // One label per sequence, int64 [n].
  at::Tensor labels;
  // Example index in the corpus of each sequence, int64 [n] (for predictions and window voting).
  at::Tensor example_ids;

  int64_t num_sequences = 0;
  int64_t real_tokens = 0;
  int64_t padded_tokens = 0;  // token slots that hold padding

  // Moves every tensor to `device` (non_blocking when the source is pinned).
  Batch To(const at::Device& device, bool non_blocking = true) const;
};

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_BATCH_H_
