#include "varlen_batch.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdint>

namespace padless::serve::internal {

batching::Batch BuildVarlenBatch(const std::vector<const tokenize::Encoding*>& sequences,
                                 bool with_types, bool pinned) {
  const int64_t n = static_cast<int64_t>(sequences.size());
  int64_t total = 0;
  for (const tokenize::Encoding* e : sequences) total += static_cast<int64_t>(e->ids.size());
  const at::TensorOptions host = at::TensorOptions().device(at::kCPU).pinned_memory(pinned);
  const at::TensorOptions i64 = host.dtype(at::kLong);
  batching::Batch b;
  b.layout = batching::Layout::kVarlen;
  b.num_sequences = n;
  b.real_tokens = total;
  b.input_ids = at::empty({total}, i64);
  b.position_ids = at::empty({total}, i64);
  if (with_types) b.token_type_ids = at::empty({total}, i64);
  b.segment_ids = at::empty({total}, i64);
  b.cu_seqlens = at::empty({n + 1}, host.dtype(at::kInt));
  b.sequence_location = at::empty({n, 2}, i64);
  b.example_ids = at::empty({n}, i64);
  int64_t* ids = b.input_ids.data_ptr<int64_t>();
  int64_t* pos = b.position_ids.data_ptr<int64_t>();
  int64_t* types = with_types ? b.token_type_ids.data_ptr<int64_t>() : nullptr;
  int64_t* seg = b.segment_ids.data_ptr<int64_t>();
  int32_t* cu = b.cu_seqlens.data_ptr<int32_t>();
  int64_t* loc = b.sequence_location.data_ptr<int64_t>();
  int64_t* examples = b.example_ids.data_ptr<int64_t>();
  int64_t at = 0;
  cu[0] = 0;
  for (int64_t s = 0; s < n; ++s) {
    const tokenize::Encoding& e = *sequences[s];
    const int64_t len = static_cast<int64_t>(e.ids.size());
    for (int64_t i = 0; i < len; ++i) {
      ids[at + i] = e.ids[i];
      pos[at + i] = i;
      seg[at + i] = s;
      // Single texts carry no type ids: type 0, as the tokenizer's template gives their tokens.
      if (types != nullptr) types[at + i] = e.type_ids.empty() ? 0 : e.type_ids[i];
    }
    loc[2 * s] = 0;
    loc[2 * s + 1] = at;
    examples[s] = s;
    b.max_seqlen = std::max(b.max_seqlen, len);
    at += len;
    cu[s + 1] = static_cast<int32_t>(at);
  }
  return b;
}

}  // namespace padless::serve::internal
