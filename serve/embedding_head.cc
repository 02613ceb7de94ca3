#include "embedding_head.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "padless/model_files/safetensors.h"

namespace padless::serve::internal {
namespace {

// sentence-transformers' Dense saves its torch.nn.Linear as "linear.weight" and "linear.bias".
absl::StatusOr<DenseWeights> LoadDense(const model_files::DenseLayer& layer, c10::Device device) {
  if (!absl::EndsWith(layer.weights_path, ".safetensors")) {
    return absl::FailedPreconditionError(
        absl::StrCat(layer.weights_path,
                     ": a Dense module's weights as a pickle; padless reads safetensors "
                     "only (save the model again with safe_serialization=True)"));
  }
  absl::StatusOr<model_files::SafetensorsFile> file =
      model_files::SafetensorsFile::Open(layer.weights_path);
  if (!file.ok()) return file.status();
  DenseWeights out;
  out.activation = layer.activation;
  const auto read = [&](const std::string& name, std::vector<int64_t> shape,
                        at::Tensor* dst) -> absl::Status {
    absl::StatusOr<at::Tensor> t = file->Tensor(name, /*copy=*/true);
    if (!t.ok()) return t.status();
    if (t->sizes() != at::IntArrayRef(shape)) {
      return absl::FailedPreconditionError(
          absl::StrCat(layer.weights_path, ": ", name, " has shape ", c10::str(t->sizes()),
                       ", expected ", c10::str(at::IntArrayRef(shape))));
    }
    *dst = t->to(device, at::kFloat);
    return absl::OkStatus();
  };
  for (const char* name : {"linear.weight", "linear.bias"}) {
    if (!file->Contains(name) && (layer.bias || absl::EndsWith(name, "weight"))) {
      return absl::FailedPreconditionError(
          absl::StrCat(layer.weights_path, ": no tensor ", name, " (a Dense module's Linear)"));
    }
  }
  if (absl::Status s = read("linear.weight", {layer.out_features, layer.in_features}, &out.weight);
      !s.ok()) {
    return s;
  }
  if (layer.bias) {
    if (absl::Status s = read("linear.bias", {layer.out_features}, &out.bias); !s.ok()) return s;
  }
  return out;
}

at::Tensor Activate(const at::Tensor& x, model_files::DenseActivation activation) {
  switch (activation) {
    case model_files::DenseActivation::kIdentity:
      return x;
    case model_files::DenseActivation::kTanh:
      return at::tanh(x);
    case model_files::DenseActivation::kRelu:
      return at::relu(x);
    case model_files::DenseActivation::kGelu:
      return at::gelu(x);  // torch.nn.GELU's default: the exact erf form
    case model_files::DenseActivation::kSigmoid:
      return at::sigmoid(x);
  }
  return x;
}

}  // namespace

EmbeddingHead PoolingOnlyHead(const models::EncoderConfig& config,
                              models::SentencePooling pooling) {
  EmbeddingHead head;
  head.info.pooling = pooling;
  head.info.hidden_size = config.hidden();
  head.info.dimension = config.hidden();
  head.cls_rows_only =
      pooling == models::SentencePooling::kCls && config.pooling() == models::Pooling::kCls;
  return head;
}

absl::StatusOr<EmbeddingHead> LoadEmbeddingHead(const model_files::SentenceTransformerSpec& spec,
                                                const models::EncoderConfig& config,
                                                std::optional<models::SentencePooling> pooling,
                                                c10::Device device) {
  if (!spec.include_prompt) {
    return absl::UnimplementedError(
        absl::StrCat(spec.transformer_dir,
                     ": a pooling that leaves the prompt's tokens out (include_prompt "
                     "false) is not supported"));
  }
  if (spec.word_embedding_dimension != 0 && spec.word_embedding_dimension != config.hidden()) {
    return absl::FailedPreconditionError(absl::StrCat(
        spec.transformer_dir, ": the pooling reads vectors of width ",
        spec.word_embedding_dimension, " but the encoder's hidden size is ", config.hidden()));
  }
  EmbeddingHead head = PoolingOnlyHead(config, pooling.value_or(spec.pooling));
  head.info.dimension = spec.embedding_dimension();
  if (head.info.dimension == 0) head.info.dimension = config.hidden();
  head.info.normalize = spec.normalize;
  head.info.prompts = spec.prompts;
  head.info.default_prompt_name = spec.default_prompt_name;
  for (const model_files::DenseLayer& layer : spec.dense) {
    absl::StatusOr<DenseWeights> dense = LoadDense(layer, device);
    if (!dense.ok()) return dense.status();
    head.dense.push_back(*std::move(dense));
  }
  return head;
}

BatchEmbeddings EmbedBatch(models::EncoderClassifierImpl& model, const batching::Batch& batch,
                           const EmbeddingHead& head, c10::DeviceType device, models::AmpMode amp,
                           bool token_states) {
  c10::InferenceMode inference;
  BatchEmbeddings out;
  at::Tensor pooled;
  {
    models::AutocastGuard autocast(device, amp);
    if (head.cls_rows_only && !token_states) {
      pooled = model.Encode(batch);
    } else {
      // In the layers' dtype: the pooling accumulates in fp32 itself.
      const at::Tensor tokens = model.EncodeTokens(batch, /*layers_dtype=*/true);
      absl::StatusOr<at::Tensor> p =
          models::PoolSequences(tokens, batch.cu_seqlens, head.info.pooling);
      TORCH_CHECK(p.ok(), "pooling: ", std::string(p.status().message()));
      pooled = *std::move(p);
      if (token_states) out.token_states = tokens.to(at::kFloat);
    }
  }
  pooled = pooled.to(at::kFloat);
  for (const DenseWeights& d : head.dense) {
    pooled = Activate(at::linear(pooled, d.weight, d.bias), d.activation);
  }
  out.embeddings = pooled;
  return out;
}

}  // namespace padless::serve::internal
