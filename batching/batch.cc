#include "padless/batching/batch.h"

namespace padless::batching {
namespace {

at::Tensor Moved(const at::Tensor& t, const at::Device& device, bool non_blocking) {
  if (!t.defined() || t.device() == device) return t;
  // A non_blocking copy is only asynchronous (and only safe to reuse the source) from pinned
  // memory; the caching host allocator keeps pinned blocks alive until the copy has finished.
  return t.to(device, /*non_blocking=*/non_blocking && t.is_pinned());
}

}  // namespace

Batch Batch::To(const at::Device& device, bool non_blocking) const {
  Batch out = *this;
  for (at::Tensor* t : {&out.input_ids, &out.attention_mask, &out.position_ids, &out.token_type_ids,
                        &out.segment_ids, &out.cu_seqlens, &out.token_index, &out.sequence_location,
                        &out.labels, &out.example_ids}) {
    *t = Moved(*t, device, non_blocking);
  }
  return out;
}

}  // namespace padless::batching
