// EncoderConfig: the shape and regularisation of the transformer encoder classifier, in the
// LibTorch frontend's builder style (`EncoderConfig::Base().layers(6)`), with presets and a JSON
// form that a saved model directory carries. Two layer designs: BERT's (learned absolute
// positions, GELU FFN, every bias) and ModernBERT's (architecture kModernBert: rotary positions,
// GeGLU FFN, optional biases, pre-LN, sliding-window attention in most layers).
#ifndef PADLESS_MODELS_ENCODER_CONFIG_H_
#define PADLESS_MODELS_ENCODER_CONFIG_H_

#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace padless::models {

enum class Activation { kGelu, kGeluTanh, kRelu };
// The encoder's layer design. kBert: BERT/RoBERTa/DistilBERT/MiniLM (learned positions and token
// types, post- or pre-LN, GELU FFN). kModernBert: transformers' modeling_modernbert.py (no position
// or token-type embeddings but rotary ones on q and k, GeGLU FFN whose in-projection holds value
// then gate rows, pre-LN with layer 0's attention norm an identity, global attention every
// global_attn_every_n_layers-th layer from layer 0 and a +-local_attention/2 window elsewhere).
enum class Architecture { kBert, kModernBert };
enum class Pooling { kCls, kMean };
// The classification head's hidden layer between the pooled vector and the label projection:
// none (padless's own models), tanh (BERT's pooler, RoBERTa's head) or relu (DistilBERT's
// pre_classifier), or ModernBERT's head (dense, GELU, LayerNorm: gelu_norm).
enum class ClassifierHidden { kNone, kTanh, kRelu, kGeluNorm };

absl::StatusOr<Activation> ParseActivation(const std::string& name);
std::string ActivationName(Activation a);
absl::StatusOr<Pooling> ParsePooling(const std::string& name);
std::string PoolingName(Pooling p);
absl::StatusOr<ClassifierHidden> ParseClassifierHidden(const std::string& name);
std::string ClassifierHiddenName(ClassifierHidden h);
absl::StatusOr<Architecture> ParseArchitecture(const std::string& name);
std::string ArchitectureName(Architecture a);

struct EncoderConfig {
  TORCH_ARG(int64_t, vocab_size) = 16000;
  TORCH_ARG(int64_t, hidden) = 768;
  TORCH_ARG(int64_t, layers) = 12;
  TORCH_ARG(int64_t, heads) = 12;
  TORCH_ARG(int64_t, ffn) = 3072;
  TORCH_ARG(int64_t, max_positions) = 512;
  // 0: no token-type embeddings (DistilBERT); 1: one row added to every token (RoBERTa).
  TORCH_ARG(int64_t, type_vocab_size) = 2;
  // Added to every position id before the position-embedding lookup (RoBERTa: padding_idx + 1 =
  // 2); sequences may then hold max_positions - position_offset tokens.
  TORCH_ARG(int64_t, position_offset) = 0;

 public:
  // The longest sequence the position embeddings can hold: max_positions - position_offset.
  int64_t max_sequence_length() const { return max_positions() - position_offset(); }

  TORCH_ARG(int64_t, num_labels) = 2;
  // Dropout after embeddings, attention output and FFN output; attention_dropout on the attention
  // probabilities.
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(double, attention_dropout) = 0.1;
  TORCH_ARG(double, layer_norm_eps) = 1e-12;
  // false: BERT's post-LN (LayerNorm after each residual add); true: pre-LN plus a final LayerNorm.
  TORCH_ARG(bool, pre_ln) = false;
  TORCH_ARG(Activation, activation) = Activation::kGelu;
  TORCH_ARG(Pooling, pooling) = Pooling::kCls;
  TORCH_ARG(ClassifierHidden, classifier_hidden) = ClassifierHidden::kNone;
  // Structured pruning (prune/): per layer, the ORIGINAL indices (in [0, heads)) of the attention
  // heads removed, sorted; empty, or one list per layer. Hugging Face's `pruned_heads` convention,
  // so that a pruned model's record survives export and a second pruning round can say which of
  // the original heads are left. Every layer keeps at least one head; head_dim() stays
  // hidden / heads.
  TORCH_ARG(std::vector<std::vector<int64_t>>, pruned_heads);
  // Per layer, the FFN neurons left (each in [1, ffn]); empty when no layer's FFN was pruned.
  TORCH_ARG(std::vector<int64_t>, layer_ffn);

  // The layer design; the fields below it belong to kModernBert (BERT models keep their
  // defaults). A ModernBERT model is pre_ln, has type_vocab_size 0 and position_offset 0 (it has
  // no learned position table: max_positions is only the longest sequence), and `ffn` is its
  // intermediate_size (the FFN-in weight holds 2 x ffn rows: value, then gate). Its dropout is
  // used after the embeddings, inside the FFN (before its out-projection) and before the
  // classifier; attention_dropout on the attention probabilities and after the attention's
  // out-projection, as transformers' embedding_dropout, mlp_dropout, classifier_dropout and
  // attention_dropout.
  TORCH_ARG(Architecture, architecture) = Architecture::kBert;
  // Rotary theta of the global-attention layers and of the sliding-window ones.
  TORCH_ARG(double, global_rope_theta) = 160000.0;
  TORCH_ARG(double, local_rope_theta) = 10000.0;
  // The sliding window's width: a token attends to the keys within +-local_attention / 2 of it.
  TORCH_ARG(int64_t, local_attention) = 128;
  // Layer i attends globally when i % global_attn_every_n_layers == 0.
  TORCH_ARG(int64_t, global_attn_every_n_layers) = 3;
  // Whether the layers' linear layers (QKV and attention out; FFN in and out) and the LayerNorms
  // (every one: embedding, layers, final, head) have biases. Only ModernBERT may leave them out.
  TORCH_ARG(bool, attention_bias) = true;
  TORCH_ARG(bool, mlp_bias) = true;
  TORCH_ARG(bool, norm_bias) = true;
  // Whether the classification head's hidden dense layer has a bias (any architecture).
  TORCH_ARG(bool, classifier_bias) = true;

 public:  // TORCH_ARG leaves the access at private.
  // Presets. base is the BERT-base shape: 12 layers, 768 hidden, 12 heads, FFN 3072.
  static EncoderConfig Tiny();
  static EncoderConfig Small();
  static EncoderConfig Base();
  // ModernBERT-base's shape (22 layers, hidden 768, 12 heads, intermediate 1152, window 128,
  // global every 3rd layer, no biases, 8192 positions, vocabulary 50368).
  static EncoderConfig ModernBertBase();
  static absl::StatusOr<EncoderConfig> Preset(const std::string& name);

  // The width of one attention head; pruning removes heads, never narrows them.
  int64_t head_dim() const { return hidden_ / heads_; }
  // Layer `layer`'s attention heads and FFN neurons after pruning (heads and ffn when unpruned).
  int64_t heads_in_layer(int64_t layer) const;
  int64_t ffn_in_layer(int64_t layer) const;
  // Summed over the layers.
  int64_t total_heads() const;
  int64_t total_ffn() const;
  // Whether any layer lost a head or an FFN neuron.
  bool pruned() const;
  bool modernbert() const { return architecture_ == Architecture::kModernBert; }
  // Layer `layer`'s attention half window: it attends to keys within +-window of each query; -1
  // for global attention (every BERT layer, and ModernBERT's every n-th from layer 0).
  int64_t attention_window(int64_t layer) const;
  // Layer `layer`'s original head indices that are left, in order: the heads its weights hold.
  std::vector<int64_t> kept_heads(int64_t layer) const;

  // Checks sizes (hidden divisible by heads, positives, dropout in [0, 1)) and the pruning record
  // (one entry per layer, head indices sorted, unique, in range, at least one head and one FFN
  // neuron left per layer); names the field.
  absl::Status Validate() const;

  std::string ToJson() const;
  // `origin` (a file path) prefixes error messages. Fields added later (position_offset,
  // classifier_hidden, pruned_heads, layer_ffn, architecture and the ModernBERT fields) default as
  // above when missing, so older model directories still load; ToJson writes the ModernBERT
  // fields only for ModernBERT models and classifier_bias only when false. pruned_heads is written as Hugging Face writes it: an object from the
  // layer index (a string) to its list, holding only the layers that lost heads.
  static absl::StatusOr<EncoderConfig> FromJson(const std::string& json,
                                                const std::string& origin = "config");
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_ENCODER_CONFIG_H_
