#include "padless/models/attention.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cudnn_attention.h"
#include "fa3_attention.h"
#include "padless/base/enum_names.h"

namespace padless::models {

namespace {
// The short names are canonical; the varlen_ ones, the enumerators' own, are accepted too.
constexpr base::EnumName<AttentionBackend> kAttentionBackends[] = {
    {"auto", AttentionBackend::kAuto},
    {"dense", AttentionBackend::kDense},
    {"flash", AttentionBackend::kVarlenFlash},
    {"varlen_flash", AttentionBackend::kVarlenFlash},
    {"efficient", AttentionBackend::kVarlenEfficient},
    {"varlen_efficient", AttentionBackend::kVarlenEfficient},
    {"reference", AttentionBackend::kVarlenReference},
    {"varlen_reference", AttentionBackend::kVarlenReference},
    {"grouped", AttentionBackend::kVarlenGrouped},
    {"varlen_grouped", AttentionBackend::kVarlenGrouped},
    {"cudnn", AttentionBackend::kVarlenCudnn},
    {"varlen_cudnn", AttentionBackend::kVarlenCudnn},
    {"fa3", AttentionBackend::kVarlenFa3},
    {"varlen_fa3", AttentionBackend::kVarlenFa3}};
}  // namespace

absl::StatusOr<AttentionBackend> ParseAttentionBackend(const std::string& name) {
  return base::ParseEnum("attention backend", name, kAttentionBackends);
}

std::string AttentionBackendName(AttentionBackend b) {
  return std::string(base::EnumToName(b, kAttentionBackends));
}

// kFa3MinMeanTokens is one full FA3 query tile. Measured on an H100 (bench/cuda/results/
// README.md, session 7 of 2026-12-07): on IMDB's lengths (mean ~270) FA3 ran attention's forward
// 1.36x and backward 1.52x FA2's, trained BERT-base 1.06x faster and served 1.31x the plain-PyTorch
// anchor against FA2's 1.28x; on SST-2's (5-45 tokens, mean 25) its forward ran 0.68x and it
// served 8-21% slower than FA2.
AttentionBackend AutoHalfPrecisionVarlenBackend(bool fa3_runs, int64_t real_tokens,
                                                int64_t sequences) {
  const bool long_enough = sequences > 0 && real_tokens >= kFa3MinMeanTokens * sequences;
  return fa3_runs && long_enough ? AttentionBackend::kVarlenFa3 : AttentionBackend::kVarlenFlash;
}

bool IsVarlen(AttentionBackend b) {
  return b == AttentionBackend::kVarlenFlash || b == AttentionBackend::kVarlenEfficient ||
         b == AttentionBackend::kVarlenReference || b == AttentionBackend::kVarlenGrouped ||
         b == AttentionBackend::kVarlenCudnn || b == AttentionBackend::kVarlenFa3;
}

void PrepareHostPlan(AttentionContext& ctx) {
  if (ctx.backend != AttentionBackend::kVarlenReference &&
      ctx.backend != AttentionBackend::kVarlenGrouped) {
    return;
  }
  const at::Tensor c = ctx.cu_seqlens.to(at::kCPU, at::kLong).contiguous();
  ctx.host_offsets.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  if (ctx.backend == AttentionBackend::kVarlenGrouped) {
    ctx.groups = BuildPaddedGroups(ctx.host_offsets, ctx.cu_seqlens.device());
  }
}

namespace {

// Keeps LibTorch's process-wide "SDPA may use cuDNN" switch off while at least one holder lives:
// the first holder saves the setting it found, the last one restores it. Other SDPA calls of the
// process that run meanwhile also skip cuDNN (a speed difference only).
class CudnnSdpaOff {
 public:
  CudnnSdpaOff() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (holders_++ == 0) {
      saved_ = at::globalContext().userEnabledCuDNNSDP();
      at::globalContext().setSDPUseCuDNN(false);
    }
  }
  ~CudnnSdpaOff() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (--holders_ == 0) at::globalContext().setSDPUseCuDNN(saved_);
  }
  CudnnSdpaOff(const CudnnSdpaOff&) = delete;
  CudnnSdpaOff& operator=(const CudnnSdpaOff&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int holders_ = 0;
  static inline bool saved_ = true;
};

at::Tensor AttendDense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionContext& ctx, double dropout_p) {
  std::optional<CudnnSdpaOff> no_cudnn;
  if (q.is_cuda() && !ctx.dense_cudnn) no_cudnn.emplace();
  return at::scaled_dot_product_attention(q, k, v, ctx.mask, dropout_p);
}

at::Tensor AttendFlash(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionContext& ctx, double dropout_p) {
  // Flash takes only half types; under autocast q/k/v already come out of at::linear in bf16/fp16,
  // otherwise compute attention in bf16 and return the input dtype.
  const bool half = q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16;
  const at::ScalarType compute = half ? q.scalar_type() : at::kBFloat16;
  auto out = std::get<0>(at::_flash_attention_forward(
      q.to(compute), k.to(compute), v.to(compute), ctx.cu_seqlens, ctx.cu_seqlens, ctx.max_seqlen,
      ctx.max_seqlen, dropout_p, /*is_causal=*/false, /*return_debug_mask=*/false));
  return out.to(q.scalar_type()).reshape({q.size(0), q.size(1) * q.size(2)});
}

// Memory-efficient attention over the packed tokens as one batch of one row: runs in fp32 as well
// (flash takes only bf16/fp16), so fp32 training on a GPU need not loop over sequences. The
// log-sum-exp is kept only when autograd will need it.
at::Tensor AttendEfficient(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const AttentionContext& ctx, double dropout_p) {
  const bool grad =
      at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  at::Tensor out = std::get<0>(at::_efficient_attention_forward(
      q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt, ctx.cu_seqlens,
      ctx.cu_seqlens, ctx.max_seqlen, ctx.max_seqlen, dropout_p, /*custom_mask_type=*/0,
      /*compute_log_sumexp=*/grad));
  return out.reshape({q.size(0), q.size(1) * q.size(2)});
}

// One sequence's queries against its keys and values, each [rows, heads, head_dim], through
// ATen's SDPA (which wants [1, heads, rows, head_dim]): [query rows, heads, head_dim].
at::Tensor SequenceAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             double dropout_p) {
  const auto heads_first = [](const at::Tensor& t) { return t.transpose(0, 1).unsqueeze(0); };
  return at::scaled_dot_product_attention(heads_first(q), heads_first(k), heads_first(v), {},
                                          dropout_p)
      .squeeze(0)
      .transpose(0, 1);
}

at::Tensor AttendReference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const AttentionContext& ctx, double dropout_p) {
  std::vector<at::Tensor> outs;
  outs.reserve(ctx.host_offsets.size());
  for (size_t i = 0; i + 1 < ctx.host_offsets.size(); ++i) {
    const int64_t start = ctx.host_offsets[i];
    const int64_t len = ctx.host_offsets[i + 1] - start;
    outs.push_back(SequenceAttention(q.narrow(0, start, len), k.narrow(0, start, len),
                                     v.narrow(0, start, len), dropout_p));
  }
  return at::cat(outs, 0).reshape({q.size(0), q.size(1) * q.size(2)});
}

// Group g's slots of a padded [slots, heads, d] tensor as SDPA's [size, heads, length, d].
at::Tensor GroupView(const at::Tensor& padded, const PaddedGroups::Group& g) {
  return padded.narrow(0, g.first_slot, g.size * g.length)
      .view({g.size, g.length, padded.size(1), padded.size(2)})
      .transpose(1, 2);
}

std::optional<at::Tensor> KeyMask(const PaddedGroups::Group& g) {
  if (!g.key_mask.defined()) return std::nullopt;
  return g.key_mask;
}

// The longest group GroupAttentionByMatmul takes: it holds a [size, heads, length, length] score
// tensor, which at long lengths (8192 tokens: 256 MiB a head) ATen's CPU flash kernel, linear in
// the length, avoids.
constexpr int64_t kLongestGroupByMatmul = 512;

// Whether groups may run as GroupAttentionByMatmul: CPU, no dropout, and nothing autograd would
// record (inference, or the fused layer's own forward, hence the length bound as well).
bool ByMatmul(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout_p) {
  return q.device().is_cpu() && dropout_p == 0.0 &&
         !(at::GradMode::is_enabled() &&
           (q.requires_grad() || k.requires_grad() || v.requires_grad()));
}

// One group's attention as two batched matrix products and a softmax over the whole group: q
// [size, heads, queries, d], k and v [size, heads, length, d]; [size, heads, queries, d]. For the
// short sequences the CPU's grouped backend serves, ATen's CPU flash kernel spends its time per
// (sequence, head) block; this form ran the grouped attention 10% faster on SST-2's lengths
// (issue 44, bench/serve/README.md). Every sequence has a real key, so no softmax row is empty.
at::Tensor GroupAttentionByMatmul(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const PaddedGroups::Group& g) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1));
  scores.mul_(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (g.key_mask.defined()) {
    scores.masked_fill_(g.key_mask.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor AttendGrouped(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const AttentionContext& ctx, double dropout_p) {
  const PaddedGroups& pg = ctx.groups;
  const int64_t width = q.size(1) * q.size(2);
  if (pg.empty()) return q.new_zeros({q.size(0), width});
  const at::Tensor qp = q.index_select(0, pg.gather);
  const at::Tensor kp = k.index_select(0, pg.gather);
  const at::Tensor vp = v.index_select(0, pg.gather);
  const bool by_matmul = ByMatmul(q, k, v, dropout_p);
  std::vector<at::Tensor> outs;
  outs.reserve(pg.groups.size());
  for (const PaddedGroups::Group& g : pg.groups) {
    const at::Tensor o =
        by_matmul && g.length <= kLongestGroupByMatmul
            ? GroupAttentionByMatmul(GroupView(qp, g), GroupView(kp, g), GroupView(vp, g), g)
            : at::scaled_dot_product_attention(GroupView(qp, g), GroupView(kp, g), GroupView(vp, g),
                                               KeyMask(g), dropout_p);
    // [size, heads, length, d] -> [size * length, heads * d], slot order.
    outs.push_back(o.transpose(1, 2).reshape({g.size * g.length, width}));
  }
  return at::cat(outs, 0).index_select(0, pg.token_slot);
}

at::Tensor FirstTokensGrouped(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const AttentionContext& ctx) {
  const PaddedGroups& pg = ctx.groups;
  const int64_t n = q.size(0);
  TORCH_CHECK(pg.sequences == n, "AttendFirstTokens: the groups hold ", pg.sequences,
              " sequences, not ", n);
  at::Tensor out = at::zeros({n, q.size(1) * q.size(2)}, q.options());
  if (pg.empty()) return out;
  const at::Tensor q1 = q.index_select(0, pg.order);  // [m, heads, d], group order
  const at::Tensor kp = k.index_select(0, pg.gather);
  const at::Tensor vp = v.index_select(0, pg.gather);
  std::vector<at::Tensor> outs;
  outs.reserve(pg.groups.size());
  const bool by_matmul = ByMatmul(q, k, v, /*dropout_p=*/0.0);
  for (const PaddedGroups::Group& g : pg.groups) {
    const at::Tensor qg = q1.narrow(0, g.first_rank, g.size).unsqueeze(2);  // [size, heads, 1, d]
    const at::Tensor o =
        by_matmul && g.length <= kLongestGroupByMatmul
            ? GroupAttentionByMatmul(qg, GroupView(kp, g), GroupView(vp, g), g)
            : at::scaled_dot_product_attention(qg, GroupView(kp, g), GroupView(vp, g), KeyMask(g));
    outs.push_back(o.reshape({g.size, out.size(1)}));
  }
  return out.index_copy(0, pg.order, at::cat(outs, 0));
}

at::Tensor FirstTokensFlash(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const AttentionContext& ctx) {
  const int64_t n = q.size(0);
  // Sequence i's one query is row i: cu_seqlens_q = 0, 1, ..., n.
  const at::Tensor one_each = at::arange(n + 1, ctx.cu_seqlens.options());
  const at::Tensor out = std::get<0>(at::_flash_attention_forward(
      q, k, v, one_each, ctx.cu_seqlens, /*max_q=*/1, ctx.max_seqlen, /*dropout_p=*/0.0,
      /*is_causal=*/false, /*return_debug_mask=*/false));
  return out.reshape({n, q.size(1) * q.size(2)});
}

at::Tensor FirstTokensReference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const AttentionContext& ctx) {
  const int64_t n = q.size(0);
  TORCH_CHECK(static_cast<int64_t>(ctx.host_offsets.size()) == n + 1,
              "AttendFirstTokens: the reference needs the host offsets of ", n, " sequences");
  at::Tensor out = at::zeros({n, q.size(1), q.size(2)}, q.options());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = ctx.host_offsets[i];
    const int64_t len = ctx.host_offsets[i + 1] - start;
    if (len == 0) continue;
    out.select(0, i).copy_(SequenceAttention(q.narrow(0, i, 1), k.narrow(0, start, len),
                                             v.narrow(0, start, len), /*dropout_p=*/0.0)
                               .squeeze(0));
  }
  return out.reshape({n, q.size(1) * q.size(2)});
}

}  // namespace

at::Tensor AttendFirstTokens(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const AttentionContext& ctx) {
  switch (ctx.backend) {
    case AttentionBackend::kVarlenFlash:
      return FirstTokensFlash(q, k, v, ctx);
    case AttentionBackend::kVarlenReference:
      return FirstTokensReference(q, k, v, ctx);
    case AttentionBackend::kVarlenGrouped:
      return FirstTokensGrouped(q, k, v, ctx);
    case AttentionBackend::kVarlenCudnn:
      return internal::FirstTokensCudnn(q, k, v, ctx);
    case AttentionBackend::kVarlenFa3:
      return internal::RunsFa3(q, 0.0) ? internal::FirstTokensFa3(q, k, v, ctx)
                                       : FirstTokensFlash(q, k, v, ctx);
    case AttentionBackend::kAuto:
    case AttentionBackend::kDense:
    case AttentionBackend::kVarlenEfficient:
      break;
  }
  TORCH_CHECK(false, "AttendFirstTokens: backend ", AttentionBackendName(ctx.backend),
              " is not supported");
}

at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const AttentionContext& ctx, double dropout_p) {
  switch (ctx.backend) {
    case AttentionBackend::kVarlenFlash:
      return AttendFlash(q, k, v, ctx, dropout_p);
    case AttentionBackend::kVarlenEfficient:
      return AttendEfficient(q, k, v, ctx, dropout_p);
    case AttentionBackend::kVarlenReference:
      return AttendReference(q, k, v, ctx, dropout_p);
    case AttentionBackend::kVarlenGrouped:
      return AttendGrouped(q, k, v, ctx, dropout_p);
    case AttentionBackend::kVarlenCudnn:
      return internal::AttendCudnn(q, k, v, ctx, dropout_p);
    case AttentionBackend::kVarlenFa3:
      return internal::RunsFa3(q, dropout_p) ? internal::AttendFa3(q, k, v, ctx, /*window=*/-1)
                                             : AttendFlash(q, k, v, ctx, dropout_p);
    case AttentionBackend::kAuto:
    case AttentionBackend::kDense:
      break;
  }
  at::Tensor o = AttendDense(q, k, v, ctx, dropout_p);
  // [B, heads, L, d] -> [B, L, heads * d]
  return o.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

}  // namespace padless::models
