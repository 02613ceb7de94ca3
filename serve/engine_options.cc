#include "engine_options.h"

#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "padless/cuda/kernels/cudnn_attention.h"

namespace padless::serve {

absl::StatusOr<LongText> ParseLongText(const std::string& name) {
  if (name == "head_tail") return LongText::kHeadTail;
  if (name == "windows" || name == "window") return LongText::kWindows;
  return absl::InvalidArgumentError(
      absl::StrCat("long text mode: unknown '", name, "' (expected head_tail or windows)"));
}

absl::string_view ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kClassifier:
      return "classifier";
    case ModelKind::kReranker:
      return "reranker";
    case ModelKind::kEmbedding:
      return "embedding";
  }
  return "unknown";
}

namespace internal {
namespace {

// EngineOptions::max_batch_tokens = 0 resolves to these.
constexpr int64_t kCpuBatchTokens = 2048;
constexpr int64_t kGpuBatchTokens = 16384;

absl::Status Positive(const char* name, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, ": must be > 0, got ", value));
}

// The backends whose kernels exist on CUDA only (attention.h).
bool NeedsCuda(models::AttentionBackend b) {
  using models::AttentionBackend;
  return b == AttentionBackend::kVarlenFlash || b == AttentionBackend::kVarlenEfficient ||
         b == AttentionBackend::kVarlenCudnn || b == AttentionBackend::kVarlenFa3;
}

// The backends that copy each batch's cu_seqlens to the host (PrepareHostPlan; dense runs the
// reference on the engine's varlen batches): a CUDA graph cannot capture that copy, and its
// replays would reuse the captured batch's offsets.
bool PlansOnHost(models::AttentionBackend b) {
  using models::AttentionBackend;
  return b == AttentionBackend::kDense || b == AttentionBackend::kVarlenReference ||
         b == AttentionBackend::kVarlenGrouped;
}

// A backend that could not run a batch on this device or build is refused now, not per batch.
absl::Status CheckAttention(const EngineOptions& o) {
  const std::string name = models::AttentionBackendName(o.attention);
  if (NeedsCuda(o.attention) && !o.device.is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention ", name, ": runs on CUDA devices only, not on device ", o.device.str(),
        " (which runs auto, dense, grouped or reference)"));
  }
  if (o.attention == models::AttentionBackend::kVarlenCudnn && !cuda::CudnnAttentionBuilt()) {
    return absl::InvalidArgumentError(
        "attention cudnn: this build has no cuDNN attention (PADLESS_CUDNN_ATTENTION with "
        "PADLESS_CUDNN_FRONTEND_DIR: README's build options)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveEngineOptions(const models::EncoderConfig& config, EngineOptions* options) {
  EngineOptions& o = *options;
  if (o.max_batch_tokens == 0) {  // by device (inference_engine.h), at least one whole text
    o.max_batch_tokens = std::max<int64_t>(o.device.is_cpu() ? kCpuBatchTokens : kGpuBatchTokens,
                                           std::min(o.max_len, config.max_sequence_length()));
  }
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"max_len", o.max_len},
                                    {"max_batch_tokens", o.max_batch_tokens},
                                    {"max_batch_requests", o.max_batch_requests},
                                    {"max_queued_requests", o.max_queued_requests}}) {
    if (absl::Status s = Positive(name, value); !s.ok()) return s;
  }
  // FP8 weights live in the fused inference layers, which run post-LN models only; computing
  // a pre-LN model in bf16 instead would hide the precision asked for.
  if (o.amp == models::AmpMode::kFp8 && config.pre_ln()) {
    return absl::InvalidArgumentError(
        "amp fp8: FP8 inference weights need a post-LN model (this one is pre-LN); use bf16");
  }
  if (o.int8_weights && (!o.device.is_cpu() || o.amp != models::AmpMode::kOff || config.pre_ln())) {
    return absl::InvalidArgumentError("int8 weights: CPU only, with amp off, for post-LN models");
  }
  if (absl::Status s = CheckAttention(o); !s.ok()) return s;
  o.max_len = std::min(o.max_len, config.max_sequence_length());
  if (o.max_len < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_len: must be >= 3 ([CLS], a token, [SEP]), got ", o.max_len));
  }
  if (o.long_text == LongText::kWindows &&
      (o.window_stride < 0 || o.window_stride >= o.max_len - 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window_stride: must be in [0, max_len - 2 = ", o.max_len - 2, "), got ", o.window_stride));
  }
  // One sequence of max_len tokens must fit a batch, or it could never be scored.
  if (o.max_batch_tokens < o.max_len) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch_tokens: must be >= max_len ",
                                                   o.max_len, ", got ", o.max_batch_tokens));
  }
  if (o.max_batch_delay.count() < 0) {
    return absl::InvalidArgumentError("max_batch_delay: must not be negative");
  }
  if (o.tokenizer_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer_threads: must be >= 0, got ", o.tokenizer_threads));
  }
  if (o.cuda_graph_max_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cuda_graph_max_tokens: must be >= 0 (0: no CUDA graphs), got ", o.cuda_graph_max_tokens));
  }
  // Graphs capture the fused inference forward (post-LN, half precision on a GPU), the forward
  // bench/serve/graph_probe.cc proved capturable, with attention that stays on the device;
  // elsewhere they are off.
  const bool half = o.amp != models::AmpMode::kOff;
  if (!o.device.is_cuda() || !half || o.int8_weights || config.pre_ln() ||
      PlansOnHost(o.attention)) {
    o.cuda_graph_max_tokens = 0;
  }
  if (o.tokenizer_threads == 0) {
    o.tokenizer_threads =
        static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));
  }
  return absl::OkStatus();
}

c10::ScalarType ComputeDtype(models::AmpMode amp) {
  switch (amp) {
    case models::AmpMode::kOff:
      return c10::kFloat;
    case models::AmpMode::kFp16:
      return c10::kHalf;
    case models::AmpMode::kBf16:
    case models::AmpMode::kFp8:  // autocasts to bf16 (autocast.h)
      break;
  }
  return c10::kBFloat16;
}

}  // namespace internal
}  // namespace padless::serve
