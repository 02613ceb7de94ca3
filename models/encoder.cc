#include "padless/models/encoder.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/models/embedding_norm.h"
#include "padless/models/fused_layer.h"
#include "fa3_attention.h"
#include "modernbert_layer.h"
#include "padless/models/recompute.h"

namespace padless::models {

using batching::Batch;
using batching::Layout;

EncoderClassifierImpl::EncoderClassifierImpl(const EncoderConfig& config) : config_(config) {
  const int64_t h = config.hidden();
  auto normal = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.02; };
  word_embeddings_ = register_parameter("word_embeddings", normal({config.vocab_size(), h}));
  // ModernBERT's positions are rotary (rotary.h): no table.
  if (!config.modernbert()) {
    position_embeddings_ =
        register_parameter("position_embeddings", normal({config.max_positions(), h}));
  }
  if (config.type_vocab_size() > 0) {
    type_embeddings_ = register_parameter("type_embeddings", normal({config.type_vocab_size(), h}));
  }
  // A LayerNorm's bias exists unless norm_bias is off (ModernBERT).
  const auto norm = [&](const char* name, at::Tensor& weight, at::Tensor& bias) {
    weight = register_parameter(absl::StrCat(name, "_weight"), at::ones({h}));
    if (config.norm_bias()) bias = register_parameter(absl::StrCat(name, "_bias"), at::zeros({h}));
  };
  norm("embedding_norm", embedding_norm_weight_, embedding_norm_bias_);
  for (int64_t i = 0; i < config.layers(); ++i) {
    layers_.push_back(register_module(absl::StrCat("layer", i), EncoderLayer(config, i)));
  }
  if (config.pre_ln()) norm("final_norm", final_norm_weight_, final_norm_bias_);
  if (config.classifier_hidden() != ClassifierHidden::kNone) {
    head_dense_weight_ = register_parameter("head_dense_weight", normal({h, h}));
    if (config.classifier_bias()) {
      head_dense_bias_ = register_parameter("head_dense_bias", at::zeros({h}));
    }
  }
  if (config.classifier_hidden() == ClassifierHidden::kGeluNorm) {
    norm("head_norm", head_norm_weight_, head_norm_bias_);
  }
  head_weight_ = register_parameter("head_weight", normal({config.num_labels(), h}));
  head_bias_ = register_parameter("head_bias", at::zeros({config.num_labels()}));
}

LayerSpec EncoderClassifierImpl::Spec() const {
  LayerSpec s;
  s.head_dim = config_.head_dim();
  s.eps = config_.layer_norm_eps();
  s.dropout = is_training() ? config_.dropout() : 0.0;
  s.attention_dropout = is_training() ? config_.attention_dropout() : 0.0;
  s.pre_ln = config_.pre_ln();
  s.activation = config_.activation();
  s.modernbert = config_.modernbert();
  s.lean = runtime_.activation_memory == ActivationMemory::kLean ||
           (runtime_.activation_memory == ActivationMemory::kAuto &&
            runtime_.checkpoint != CheckpointPolicy::None());
  return s;
}

absl::Status EncoderClassifierImpl::CheckBatch(const Batch& b) const {
  if (!b.input_ids.defined()) return absl::InvalidArgumentError("batch: input_ids is undefined");
  if (!b.labels.defined() && b.num_sequences <= 0) {
    return absl::InvalidArgumentError("batch: no sequences");
  }
  int64_t longest = 0;
  switch (b.layout) {
    case Layout::kPadded:
      if (b.input_ids.dim() != 2 || !b.attention_mask.defined()) {
        return absl::InvalidArgumentError(
            "batch: padded layout needs input_ids [B, L] and attention_mask");
      }
      longest = b.input_ids.size(1);
      break;
    case Layout::kPacked:
      if (b.input_ids.dim() != 2 || !b.position_ids.defined() || !b.segment_ids.defined() ||
          !b.cu_seqlens.defined() || !b.token_index.defined()) {
        return absl::InvalidArgumentError(
            "batch: packed layout needs input_ids [R, L], position_ids, segment_ids, cu_seqlens "
            "and token_index");
      }
      longest = b.max_seqlen;
      break;
    case Layout::kVarlen:
      if (b.input_ids.dim() != 1 || !b.position_ids.defined() || !b.cu_seqlens.defined()) {
        return absl::InvalidArgumentError(
            "batch: varlen layout needs input_ids [T], position_ids and cu_seqlens");
      }
      longest = b.max_seqlen;
      break;
  }
  if (longest > config_.max_sequence_length()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch: a sequence of ", longest, " tokens exceeds max_positions ", config_.max_positions(),
        config_.position_offset() > 0
            ? absl::StrCat(" less position_offset ", config_.position_offset())
            : ""));
  }
  return absl::OkStatus();
}

namespace {

// The batch's real tokens and sequences, for the kAuto rule; batches built without the counts
// (tests, callers' own) are counted from their tensors.
int64_t Sequences(const Batch& b) {
  if (b.num_sequences > 0) return b.num_sequences;
  return b.cu_seqlens.defined() ? b.cu_seqlens.numel() - 1 : 0;
}
int64_t RealTokens(const Batch& b) {
  return b.real_tokens > 0 ? b.real_tokens : b.input_ids.numel();
}

}  // namespace

// The layers' calls ask internal::RunsFa3 the same question, so `auto` never names FA3 for calls
// that FA2 runs (a BERT training with attention dropout, fp16, head dims other than 64).
bool EncoderClassifierImpl::Fa3RunsCalls(const at::Device& device, at::ScalarType compute) const {
  const double attention_dropout = is_training() ? config_.attention_dropout() : 0.0;
  return internal::Fa3RunsCall(device, compute, config_.head_dim(), attention_dropout);
}

AttentionBackend EncoderClassifierImpl::ResolveBackend(const Batch& b) const {
  if (runtime_.attention != AttentionBackend::kAuto) {
    // A varlen-only layout cannot use a dense mask.
    if (b.layout == Layout::kVarlen && runtime_.attention == AttentionBackend::kDense) {
      return AttentionBackend::kVarlenReference;
    }
    if (config_.modernbert() && runtime_.attention == AttentionBackend::kVarlenEfficient) {
      return AttentionBackend::kVarlenGrouped;  // no windowed kernel (windowed_attention.h)
    }
    return runtime_.attention;
  }
  if (b.layout == Layout::kPadded) return AttentionBackend::kDense;
  const bool cuda = b.input_ids.is_cuda();
  const bool half_weights = word_embeddings_.scalar_type() == at::kHalf ||
                            word_embeddings_.scalar_type() == at::kBFloat16;
  const bool half_autocast = at::autocast::is_autocast_enabled(at::kCUDA) &&
                             at::autocast::get_autocast_dtype(at::kCUDA) != at::kFloat;
  if (cuda && (half_weights || half_autocast)) {
    const at::ScalarType compute = half_autocast ? at::autocast::get_autocast_dtype(at::kCUDA)
                                                 : word_embeddings_.scalar_type();
    return AutoHalfPrecisionVarlenBackend(Fa3RunsCalls(b.input_ids.device(), compute),
                                          RealTokens(b), Sequences(b));
  }
  // Sliding windows have no memory-efficient varlen kernel (windowed_attention.h).
  if (cuda && b.layout == Layout::kVarlen) {
    return config_.modernbert() ? AttentionBackend::kVarlenGrouped
                                : AttentionBackend::kVarlenEfficient;
  }
  return b.layout == Layout::kPacked ? AttentionBackend::kDense : AttentionBackend::kVarlenGrouped;
}

at::Tensor EncoderClassifierImpl::Embed(const at::Tensor& ids, const at::Tensor& positions,
                                        const at::Tensor& types) {
  if (config_.modernbert()) {
    // Word embeddings and their LayerNorm alone: positions are rotary, in the layers.
    const at::Tensor x = at::layer_norm(at::embedding(word_embeddings_, ids.to(at::kInt)),
                                        {config_.hidden()}, embedding_norm_weight_,
                                        embedding_norm_bias_, config_.layer_norm_eps());
    return at::dropout(x, is_training() ? config_.dropout() : 0.0, is_training());
  }
  // 32-bit indices: the embeddings' backward radix-sorts every bit of its index type, so int64
  // indices cost 16 sort passes a step and int32 ones 8 (LibTorch 2.11, H200 trace).
  const at::Tensor shifted =
      (config_.position_offset() == 0 ? positions : positions + config_.position_offset())
          .to(at::kInt);
  // One token type for every token (RoBERTa whatever the batch's type ids say, or no type ids)
  // is a constant row: added to the position table before the gather rather than to every
  // token's row after it, which saves a pass over [T, H] forward and a sum over T backward.
  const bool one_type =
      config_.type_vocab_size() == 1 || (config_.type_vocab_size() > 1 && !types.defined());
  const at::Tensor position_table =
      one_type ? position_embeddings_ + type_embeddings_[0] : position_embeddings_;
  at::Tensor words = at::embedding(word_embeddings_, ids.to(at::kInt));
  if (!one_type && config_.type_vocab_size() > 1) {
    words = words + at::embedding(type_embeddings_, types.to(at::kInt));
  }
  const at::Tensor x =
      SumLayerNorm(words, at::embedding(position_table, shifted), embedding_norm_weight_,
                   embedding_norm_bias_, config_.layer_norm_eps());
  return at::dropout(x, is_training() ? config_.dropout() : 0.0, is_training());
}

at::Tensor EncoderClassifierImpl::RunLayers(at::Tensor x, const AttentionContext& ctx,
                                            const at::Tensor& out_rows) {
  const LayerSpec spec = Spec();
  const auto keep = [&](const at::Tensor& h) {
    return out_rows.defined() ? h.index_select(0, out_rows) : h;
  };
  // Varlen batches go through the fused layer (fused_layer.h): in training with its hand-written
  // backward, in inference (no autograd) as a forward alone.
  // ModernBERT's layers have no fused form yet: the generic ones run them.
  if (!runtime_.fused_layers || spec.modernbert || !FusedLayerSupported(x, spec, ctx)) {
    return keep(RunGenericLayers(std::move(x), spec, ctx));
  }
  // The inference forward applies no dropout: a training-mode model without grad (dropout on,
  // nothing to backpropagate) takes the training path, which does.
  if (!at::GradMode::is_enabled() && !is_training()) {
    // With last_layer_rows_only the last layer computes the kept rows alone.
    const at::Tensor last_rows = runtime_.last_layer_rows_only ? out_rows : at::Tensor();
    const at::Tensor h = RunFusedInferenceLayers(std::move(x), spec, ctx, last_rows);
    return last_rows.defined() ? h : keep(h);
  }
  return keep(RunFusedTrainingLayers(std::move(x), spec, ctx));
}

std::vector<at::TensorList> EncoderClassifierImpl::LayerWeights() const {
  std::vector<at::TensorList> all;
  for (const auto& layer : layers_) all.emplace_back(layer->weights());
  return all;
}

at::Tensor EncoderClassifierImpl::RunGenericLayers(at::Tensor x, const LayerSpec& spec,
                                                   const AttentionContext& ctx) {
  const bool recompute_possible = at::GradMode::is_enabled();
  // ModernBERT's int8 CPU inference (PrepareInt8Inference) runs here: its layers have no fused form.
  const bool int8 = !inference_int8_.empty() && x.device().is_cpu() && !recompute_possible &&
                    !is_training();
  if (spec.lean) x = ToResidualStream(x);
  LayerSpec layer_spec = spec;
  for (int64_t i = 0; i < num_layers(); ++i) {
    const std::vector<at::Tensor>& w = layers_[i]->weights();
    layer_spec.window = config_.attention_window(i);
    if (int8 && spec.modernbert) {
      const Int8LayerWeights* gemms = &inference_int8_[i];
      x = internal::ModernBertFfnBlock(
          internal::ModernBertAttentionBlock(x, w, layer_spec, ctx, gemms), w, layer_spec, gemms);
    } else if (recompute_possible && runtime_.checkpoint.Checkpoints(i, num_layers())) {
      x = CheckpointedLayerForward(x, w, layer_spec, ctx, runtime_.checkpoint.scope);
    } else {
      x = EncoderLayerForward(x, w, layer_spec, ctx);
    }
  }
  return x;
}

at::Tensor EncoderClassifierImpl::RunFusedTrainingLayers(at::Tensor x, const LayerSpec& spec,
                                                         const AttentionContext& ctx) {
  // The fused layers' compute-dtype weights, all cast at once; each layer's are dropped after its
  // forward unless it keeps them for backward.
  x = x.to(FusedComputeDtype(x));
  std::vector<std::vector<at::Tensor>> compute =
      FusedComputeWeights(LayerWeights(), x.scalar_type());
  for (int64_t i = 0; i < num_layers(); ++i) {
    const std::vector<at::Tensor>& w = layers_[i]->weights();
    // Every layer input is a checkpoint boundary, the first one included.
    const bool checkpointed = runtime_.checkpoint.Checkpoints(i, num_layers());
    FusedSaving saving = FusedSaving::kSaveAll;
    if (checkpointed && runtime_.checkpoint.scope == CheckpointScope::kLayer) {
      saving = FusedSaving::kRecomputeAll;
    } else if (checkpointed && runtime_.checkpoint.scope == CheckpointScope::kSelective) {
      saving = FusedSaving::kRecomputeToActivation;
    }
    if (checkpointed && saving == FusedSaving::kSaveAll) {
      // An ffn/attn scope: only the generic path can split a layer.
      x = CheckpointedLayerForward(x, w, spec, ctx, runtime_.checkpoint.scope);
    } else {
      FusedLayerFp8 fp8;  // C++17: no designated initializers
      fp8.scaling = runtime_.fp8.get();
      fp8.first_gemm = i * kFusedLayerGemms;
      x = FusedEncoderLayerForward(x, w, spec, ctx, saving, &compute[i], fp8);
    }
    compute[i].clear();  // a kSaveAll layer kept its own copies
  }
  return x;
}

at::Tensor EncoderClassifierImpl::RunFusedInferenceLayers(at::Tensor x, const LayerSpec& spec,
                                                          const AttentionContext& ctx,
                                                          const at::Tensor& out_rows) {
  x = x.to(FusedComputeDtype(x));
  // PrepareInference's copies when they fit this call; else cast now, as training does.
  const bool cached = !inference_weights_.empty() && inference_dtype_ == x.scalar_type() &&
                      inference_weights_[0][0].device() == x.device();
  std::vector<std::vector<at::Tensor>> fresh;
  if (!cached) fresh = FusedComputeWeights(LayerWeights(), x.scalar_type());
  const std::vector<std::vector<at::Tensor>>& compute = cached ? inference_weights_ : fresh;
  const bool fp8 = cached && !inference_fp8_.empty();
  const bool int8 = cached && !inference_int8_.empty() && x.device().is_cpu();
  InferenceRows rows;
  rows.x = std::move(x);
  for (int64_t i = 0; i < num_layers(); ++i) {
    // The next layer's QKV GEMM (its first, [0]) in FP8: this layer's last LayerNorm writes the
    // FP8 copy of that GEMM's input.
    const bool last = i + 1 == num_layers();
    const bool next_fp8 = fp8 && !last && inference_fp8_[i + 1].gemms[0].values.defined();
    rows = FusedEncoderLayerInfer(
        rows, layers_[i]->weights(), spec, ctx, &compute[i], fp8 ? &inference_fp8_[i] : nullptr,
        next_fp8, int8 ? &inference_int8_[i] : nullptr, last ? out_rows : at::Tensor());
  }
  return std::move(rows.x);
}

void EncoderClassifierImpl::PrepareInference(at::ScalarType dtype, bool fp8_weights) {
  if (config_.modernbert()) {
    // Its layers run the generic path, which reads the parameters themselves.
    inference_weights_.clear();
    inference_fp8_.clear();
    inference_int8_.clear();
    return;
  }
  inference_weights_ = FusedComputeWeights(LayerWeights(), dtype);
  inference_dtype_ = dtype;
  inference_fp8_.clear();
  inference_int8_.clear();
  if (fp8_weights) inference_fp8_ = QuantizeInferenceWeights(LayerWeights());
}

absl::Status EncoderClassifierImpl::PrepareInt8Inference() {
  PrepareInference(at::kFloat);
  // ModernBERT's generic layers add every GEMM's bias in the GEMM (no fused LayerNorm follows).
  absl::StatusOr<std::vector<Int8LayerWeights>> packed =
      PackInt8InferenceWeights(LayerWeights(), /*every_bias=*/config_.modernbert());
  if (!packed.ok()) return packed.status();
  inference_int8_ = *std::move(packed);
  return absl::OkStatus();
}

void EncoderClassifierImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (on) {
    inference_weights_.clear();
    inference_fp8_.clear();
    inference_int8_.clear();
  }
}

void EncoderClassifierImpl::AddRotaryTables(AttentionContext& ctx,
                                            const at::Tensor& positions) const {
  if (!config_.modernbert()) return;
  ctx.rotary_global = BuildRotaryTable(positions, config_.head_dim(), config_.global_rope_theta());
  ctx.rotary_local = BuildRotaryTable(positions, config_.head_dim(), config_.local_rope_theta());
}

at::Tensor EncoderClassifierImpl::FinishTokens(const at::Tensor& h, at::ScalarType dtype) {
  const at::Tensor x = h.to(dtype);
  if (!config_.pre_ln()) return x;
  return at::layer_norm(x, {config_.hidden()}, final_norm_weight_, final_norm_bias_,
                        config_.layer_norm_eps());
}

namespace {

// Each sequence's first token ([CLS]) as a row index of the varlen layout: int64 [n].
at::Tensor FirstTokens(const at::Tensor& cu_seqlens, int64_t n) {
  return cu_seqlens.narrow(0, 0, n).to(at::kLong);
}

// Pools a varlen [T, H] output per sequence. `seq_of_token` ([T] int64) is needed for mean.
at::Tensor PoolVarlen(const at::Tensor& h, const at::Tensor& cu_seqlens,
                      const at::Tensor& seq_of_token, int64_t n, Pooling pooling) {
  if (pooling == Pooling::kCls) return h.index_select(0, FirstTokens(cu_seqlens, n));
  at::Tensor lengths =
      (cu_seqlens.narrow(0, 1, n) - cu_seqlens.narrow(0, 0, n)).to(h.scalar_type());
  at::Tensor sums = at::zeros({n, h.size(1)}, h.options()).index_add_(0, seq_of_token, h);
  return sums / lengths.clamp_min(1).unsqueeze(1);
}

// Sequence index of every token of a varlen layout, from cu_seqlens (no host sync: the output
// size is the known token count).
at::Tensor SequenceOfToken(const at::Tensor& cu_seqlens, int64_t n, int64_t total) {
  at::Tensor lengths = (cu_seqlens.narrow(0, 1, n) - cu_seqlens.narrow(0, 0, n)).to(at::kLong);
  return at::repeat_interleave(at::arange(n, lengths.options()), lengths, /*dim=*/0, total);
}

int64_t NumSequences(const Batch& b) {
  if (b.num_sequences > 0) return b.num_sequences;
  if (b.cu_seqlens.defined()) return b.cu_seqlens.size(0) - 1;
  if (b.labels.defined()) return b.labels.size(0);
  return b.input_ids.size(0);
}

}  // namespace

namespace {

// A batch's real tokens in the varlen [T] layout, for the varlen attention backends.
struct VarlenInputs {
  at::Tensor ids, positions, types;
  at::Tensor seq;  // sequence of each token (mean pooling only)
};

// Padded or packed rows gathered into the varlen layout; sets the context's cu_seqlens and
// max_seqlen.
VarlenInputs GatherRows(const Batch& b, Pooling pooling, AttentionContext& ctx) {
  at::Tensor index = b.token_index;
  at::Tensor cu = b.cu_seqlens;
  int64_t max_seqlen = b.max_seqlen;
  at::Tensor seg_grid = b.segment_ids;
  if (b.layout == Layout::kPadded) {
    // Padded rows as varlen: one sequence per row (host sync: for tests and forced backends).
    at::Tensor mask = b.attention_mask;
    index = mask.reshape(-1).nonzero().squeeze(1);
    at::Tensor lengths = mask.sum(1);
    cu = at::cat({at::zeros({1}, lengths.options()), lengths.cumsum(0)}).to(at::kInt);
    max_seqlen = b.input_ids.size(1);
    seg_grid = at::arange(b.input_ids.size(0), index.options()).unsqueeze(1).expand_as(b.input_ids);
  }
  auto gather = [&](const at::Tensor& grid) {
    return grid.defined() ? grid.reshape(-1).index_select(0, index) : grid;
  };
  VarlenInputs in;
  in.ids = gather(b.input_ids);
  in.positions =
      b.position_ids.defined()
          ? gather(b.position_ids)
          : gather(at::arange(b.input_ids.size(1), index.options()).expand_as(b.input_ids));
  in.types = gather(b.token_type_ids);
  in.seq = pooling == Pooling::kMean ? gather(seg_grid) : at::Tensor();
  ctx.cu_seqlens = cu;
  ctx.max_seqlen = max_seqlen;
  return in;
}

// Gather the real tokens into the varlen [T] layout, then never touch padding again.
VarlenInputs ToVarlen(const Batch& b, int64_t n, Pooling pooling, AttentionContext& ctx) {
  if (b.layout != Layout::kVarlen) return GatherRows(b, pooling, ctx);
  VarlenInputs in;
  in.ids = b.input_ids;
  in.positions = b.position_ids;
  in.types = b.token_type_ids;
  ctx.cu_seqlens = b.cu_seqlens;
  ctx.max_seqlen = b.max_seqlen;
  if (pooling == Pooling::kMean) {
    in.seq =
        b.segment_ids.defined() ? b.segment_ids : SequenceOfToken(b.cu_seqlens, n, in.ids.size(0));
  }
  return in;
}

}  // namespace

at::Tensor EncoderClassifierImpl::Encode(const Batch& b) {
  const AttentionBackend backend = ResolveBackend(b);
  const int64_t n = NumSequences(b);
  const Pooling pooling = config_.pooling();
  AttentionContext ctx;
  ctx.backend = backend;
  ctx.dense_cudnn = runtime_.dense_attention_cudnn;
  if (IsVarlen(backend)) {
    const VarlenInputs in = ToVarlen(b, n, pooling, ctx);
    PrepareHostPlan(ctx);
    AddRotaryTables(ctx, in.positions);
    const at::Tensor x = Embed(in.ids, in.positions, in.types);
    // [CLS] pooling keeps one row per sequence, and FinishTokens works row by row: finishing the
    // kept rows alone gives the same values without casting every token (forward and backward).
    // The fused inference forward also computes its last layer for those rows alone.
    if (pooling == Pooling::kCls) {
      return FinishTokens(RunLayers(x, ctx, FirstTokens(ctx.cu_seqlens, n)), x.scalar_type());
    }
    return PoolVarlen(FinishTokens(RunLayers(x, ctx), x.scalar_type()), ctx.cu_seqlens, in.seq, n,
                      pooling);
  }
  return EncodeDense(b, ctx, n);
}

// Dense [R, L, H] with a mask.
at::Tensor EncoderClassifierImpl::EncodeDense(const Batch& b, AttentionContext& ctx, int64_t n) {
  const Pooling pooling = config_.pooling();
  at::Tensor positions = b.position_ids;
  if (!positions.defined()) {
    positions = at::arange(b.input_ids.size(1), b.input_ids.options()).expand_as(b.input_ids);
  }
  at::Tensor x = Embed(b.input_ids, positions, b.token_type_ids);
  AddRotaryTables(ctx, positions);
  if (b.layout == Layout::kPadded) {
    ctx.mask = b.attention_mask.to(at::kBool).unsqueeze(1).unsqueeze(1);  // [B, 1, 1, L]
    at::Tensor h = FinishTokens(RunLayers(x, ctx), x.scalar_type());
    if (pooling == Pooling::kCls) return h.select(1, 0);
    at::Tensor m = b.attention_mask.to(h.scalar_type()).unsqueeze(2);
    return (h * m).sum(1) / m.sum(1).clamp_min(1);
  }
  // Packed rows: block-diagonal mask. Padding slots (segment -1) attend among themselves, which
  // keeps their softmax finite; no real token sees them.
  at::Tensor seg = b.segment_ids;
  ctx.mask = (seg.unsqueeze(2) == seg.unsqueeze(1)).unsqueeze(1);  // [R, 1, L, L]
  at::Tensor h = FinishTokens(RunLayers(x, ctx), x.scalar_type());
  at::Tensor real = h.reshape({-1, h.size(2)}).index_select(0, b.token_index);
  at::Tensor seq =
      pooling == Pooling::kMean ? seg.reshape(-1).index_select(0, b.token_index) : at::Tensor();
  return PoolVarlen(real, b.cu_seqlens, seq, n, pooling);
}

at::Tensor EncoderClassifierImpl::forward(const Batch& b) {
  at::Tensor pooled = Encode(b);
  // The hidden layer of imported heads: BERT's pooler (dense, tanh) and DistilBERT's
  // pre_classifier (dense, ReLU) both come before the dropout; RoBERTa's head also drops out
  // before its dense, which this leaves out (identical in eval mode).
  switch (config_.classifier_hidden()) {
    case ClassifierHidden::kTanh:
      pooled = at::tanh(at::linear(pooled, head_dense_weight_, head_dense_bias_));
      break;
    case ClassifierHidden::kRelu:
      pooled = at::relu(at::linear(pooled, head_dense_weight_, head_dense_bias_));
      break;
    case ClassifierHidden::kGeluNorm:  // ModernBERT's head
      pooled = at::layer_norm(at::gelu(at::linear(pooled, head_dense_weight_, head_dense_bias_)),
                              {config_.hidden()}, head_norm_weight_, head_norm_bias_,
                              config_.layer_norm_eps());
      break;
    case ClassifierHidden::kNone:
      break;
  }
  pooled = at::dropout(pooled, is_training() ? config_.dropout() : 0.0, is_training());
  return at::linear(pooled, head_weight_, head_bias_);
}

at::Tensor EncoderClassifierImpl::EncodeTokens(const Batch& b, bool layers_dtype) {
  const AttentionBackend backend = ResolveBackend(b);
  AttentionContext ctx;
  ctx.backend = backend;
  ctx.dense_cudnn = runtime_.dense_attention_cudnn;
  if (IsVarlen(backend)) {
    const VarlenInputs in = ToVarlen(b, NumSequences(b), Pooling::kCls, ctx);
    PrepareHostPlan(ctx);
    AddRotaryTables(ctx, in.positions);
    const at::Tensor x = Embed(in.ids, in.positions, in.types);
    const at::Tensor h = RunLayers(x, ctx);
    return FinishTokens(h, layers_dtype ? h.scalar_type() : x.scalar_type());
  }
  at::Tensor positions = b.position_ids;
  if (!positions.defined()) {
    positions = at::arange(b.input_ids.size(1), b.input_ids.options()).expand_as(b.input_ids);
  }
  at::Tensor index = b.token_index;
  if (b.layout == Layout::kPadded) {
    ctx.mask = b.attention_mask.to(at::kBool).unsqueeze(1).unsqueeze(1);
    index = b.attention_mask.reshape(-1).nonzero().squeeze(1);
  } else {
    ctx.mask = (b.segment_ids.unsqueeze(2) == b.segment_ids.unsqueeze(1)).unsqueeze(1);
  }
  const at::Tensor x = Embed(b.input_ids, positions, b.token_type_ids);
  AddRotaryTables(ctx, positions);
  const at::Tensor layers = RunLayers(x, ctx);
  const at::Tensor h = FinishTokens(layers, layers_dtype ? layers.scalar_type() : x.scalar_type());
  return h.reshape({-1, h.size(2)}).index_select(0, index);
}

void EncoderClassifierImpl::FreezeEmbeddings(bool frozen) {
  for (at::Tensor* t : {&word_embeddings_, &position_embeddings_, &type_embeddings_,
                        &embedding_norm_weight_, &embedding_norm_bias_}) {
    if (t->defined()) t->set_requires_grad(!frozen);
  }
}

void EncoderClassifierImpl::FreezeLayersBelow(int64_t k) {
  for (int64_t i = 0; i < num_layers(); ++i) {
    for (at::Tensor& p : layers_[i]->parameters()) p.set_requires_grad(i >= k);
  }
}

at::Tensor ClassificationLoss(const at::Tensor& logits, const at::Tensor& labels) {
  return at::cross_entropy_loss(logits.to(at::kFloat), labels);
}

}  // namespace padless::models
