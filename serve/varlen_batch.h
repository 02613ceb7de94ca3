// The host half of a device batch: the model inputs of several sequences as a batching::Batch in
// Layout::kVarlen (real tokens only, flat [T]), filled the way batching/collator.cc fills one, so
// that no padding token is ever computed.
#ifndef PADLESS_SERVE_VARLEN_BATCH_H_
#define PADLESS_SERVE_VARLEN_BATCH_H_

#include <vector>

#include "padless/batching/batch.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::internal {

// input_ids and position_ids (restarting at 0 per sequence) [T] int64; token_type_ids [T] int64
// when `with_types` (0 for single texts); segment_ids [T] int64; cu_seqlens [n+1] int32;
// sequence_location [n, 2]; example_ids [n] (the sequence's place in `sequences`); no labels.
// `pinned`: page-locked memory, so that the copy to a GPU can be asynchronous.
batching::Batch BuildVarlenBatch(const std::vector<const tokenize::Encoding*>& sequences,
                                 bool with_types, bool pinned);

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_VARLEN_BATCH_H_
