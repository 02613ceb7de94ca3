#include "windowed_attention.h"

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "fa3_attention.h"

namespace padless::models::internal {

at::Tensor BandMask(int64_t length, int64_t window, const at::Device& device) {
  const at::Tensor i = at::arange(length, at::TensorOptions().dtype(at::kLong).device(device));
  return (i.unsqueeze(1) - i.unsqueeze(0)).abs() <= window;
}

namespace {

at::Tensor FlashWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const AttentionContext& ctx, int64_t window, double dropout_p) {
  // As AttendFlash (attention.cc): half types only, computed in bf16 otherwise.
  const bool half = q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16;
  const at::ScalarType compute = half ? q.scalar_type() : at::kBFloat16;
  const at::Tensor out = std::get<0>(at::_flash_attention_forward(
      q.to(compute), k.to(compute), v.to(compute), ctx.cu_seqlens, ctx.cu_seqlens, ctx.max_seqlen,
      ctx.max_seqlen, dropout_p, /*is_causal=*/false, /*return_debug_mask=*/false,
      /*scale=*/std::nullopt, /*window_size_left=*/window, /*window_size_right=*/window));
  return out.to(q.scalar_type()).reshape({q.size(0), q.size(1) * q.size(2)});
}

// One sequence at a time, as attention.cc's reference, with the band as SDPA's mask.
at::Tensor ReferenceWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const AttentionContext& ctx, int64_t window, double dropout_p) {
  const auto heads_first = [](const at::Tensor& t) { return t.transpose(0, 1).unsqueeze(0); };
  std::vector<at::Tensor> outs;
  for (size_t i = 0; i + 1 < ctx.host_offsets.size(); ++i) {
    const int64_t start = ctx.host_offsets[i];
    const int64_t len = ctx.host_offsets[i + 1] - start;
    if (len == 0) continue;
    const at::Tensor o = at::scaled_dot_product_attention(
        heads_first(q.narrow(0, start, len)), heads_first(k.narrow(0, start, len)),
        heads_first(v.narrow(0, start, len)), BandMask(len, window, q.device()), dropout_p);
    outs.push_back(o.squeeze(0).transpose(0, 1));
  }
  if (outs.empty()) return q.new_zeros({0, q.size(1) * q.size(2)});
  return at::cat(outs, 0).reshape({q.size(0), q.size(1) * q.size(2)});
}

// Group g's slots of a padded [slots, heads, d] tensor as SDPA's [size, heads, length, d].
at::Tensor GroupView(const at::Tensor& padded, const PaddedGroups::Group& g) {
  return padded.narrow(0, g.first_slot, g.size * g.length)
      .view({g.size, g.length, padded.size(1), padded.size(2)})
      .transpose(1, 2);
}

// A group's mask: the band over real keys. A padding query (discarded) may see every real key,
// so that no softmax row is empty: an empty one is NaN, and its gradient would reach the real
// row the padding slot copies.
at::Tensor GroupMask(const PaddedGroups::Group& g, int64_t window, const at::Device& device) {
  const at::Tensor band = BandMask(g.length, window, device);
  if (!g.key_mask.defined()) return band;
  const at::Tensor real_query = g.key_mask.transpose(-1, -2);  // [size, 1, length, 1]
  return g.key_mask & (band | real_query.logical_not());
}

at::Tensor GroupedWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const AttentionContext& ctx, int64_t window, double dropout_p) {
  const PaddedGroups& pg = ctx.groups;
  const int64_t width = q.size(1) * q.size(2);
  if (pg.empty()) return q.new_zeros({q.size(0), width});
  const at::Tensor qp = q.index_select(0, pg.gather);
  const at::Tensor kp = k.index_select(0, pg.gather);
  const at::Tensor vp = v.index_select(0, pg.gather);
  std::vector<at::Tensor> outs;
  outs.reserve(pg.groups.size());
  for (const PaddedGroups::Group& g : pg.groups) {
    const at::Tensor o =
        at::scaled_dot_product_attention(GroupView(qp, g), GroupView(kp, g), GroupView(vp, g),
                                         GroupMask(g, window, q.device()), dropout_p);
    outs.push_back(o.transpose(1, 2).reshape({g.size * g.length, width}));
  }
  return at::cat(outs, 0).index_select(0, pg.token_slot);
}

// Dense rows: the context's mask and the band. A padding mask ([B, 1, 1, L]) lets padding
// queries see every real key (see GroupMask); packed rows' block-diagonal mask ([R, 1, L, L])
// lets every slot see itself already.
at::Tensor DenseWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const AttentionContext& ctx, int64_t window, double dropout_p) {
  const at::Tensor band = BandMask(q.size(2), window, q.device());
  at::Tensor mask = band;
  if (ctx.mask.defined() && ctx.mask.size(-2) == 1) {
    mask = ctx.mask & (band | ctx.mask.transpose(-1, -2).logical_not());
  } else if (ctx.mask.defined()) {
    mask = ctx.mask & band;
  }
  const at::Tensor o = at::scaled_dot_product_attention(q, k, v, mask, dropout_p);
  return o.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

}  // namespace

at::Tensor AttendWindowed(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionContext& ctx, int64_t window, double dropout_p) {
  if (window < 0) return Attend(q, k, v, ctx, dropout_p);
  switch (ctx.backend) {
    case AttentionBackend::kVarlenFlash:
      return FlashWindowed(q, k, v, ctx, window, dropout_p);
    case AttentionBackend::kVarlenFa3:
      return RunsFa3(q, dropout_p) ? AttendFa3(q, k, v, ctx, window)
                                   : FlashWindowed(q, k, v, ctx, window, dropout_p);
    case AttentionBackend::kVarlenReference:
      return ReferenceWindowed(q, k, v, ctx, window, dropout_p);
    case AttentionBackend::kVarlenGrouped:
      return GroupedWindowed(q, k, v, ctx, window, dropout_p);
    case AttentionBackend::kVarlenCudnn:
      TORCH_CHECK(false,
                  "sliding-window attention is not wired to the cuDNN backend yet; use the flash, "
                  "grouped or reference backend");
    case AttentionBackend::kVarlenEfficient:
      TORCH_CHECK(false,
                  "sliding-window attention has no memory-efficient varlen kernel; use the flash, "
                  "grouped or reference backend");
    case AttentionBackend::kAuto:
    case AttentionBackend::kDense:
      break;
  }
  return DenseWindowed(q, k, v, ctx, window, dropout_p);
}

}  // namespace padless::models::internal
