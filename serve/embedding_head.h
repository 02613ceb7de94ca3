// EmbeddingHead: what an embedding engine runs after the encoder, on the device: the pooling of
// each sequence's token vectors (models::PoolSequences on the varlen batch, no padding) and the
// sentence-transformers Dense modules, with their weights loaded from the directory; and the
// forward of a device batch through the encoder and that head (EmbedBatch).
#ifndef PADLESS_SERVE_EMBEDDING_HEAD_H_
#define PADLESS_SERVE_EMBEDDING_HEAD_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch.h"
#include "padless/model_files/sentence_transformers.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve::internal {

struct DenseWeights {
  at::Tensor weight;  // [out, in] fp32 on the engine's device
  at::Tensor bias;    // [out] fp32, or undefined
  model_files::DenseActivation activation = model_files::DenseActivation::kIdentity;
};

struct EmbeddingHead {
  EmbeddingInfo info;
  std::vector<DenseWeights> dense;
  // The model's own [CLS] pooling also pools with kCls: then the encoder computes its last layer
  // for the first rows alone (EncoderClassifierImpl::Encode), unless token vectors are asked for.
  bool cls_rows_only = false;
};

// The head of a sentence-transformers directory `spec` (with `pooling` replacing its pooling
// mode when set), its Dense weights read from safetensors onto `device`. FailedPrecondition for a
// Dense module stored as pytorch_model.bin only (a pickle, which padless does not read), or whose
// tensors are missing or of the wrong shape; Unimplemented for include_prompt false.
absl::StatusOr<EmbeddingHead> LoadEmbeddingHead(const model_files::SentenceTransformerSpec& spec,
                                                const models::EncoderConfig& config,
                                                std::optional<models::SentencePooling> pooling,
                                                c10::Device device);
// The head of a plain encoder served with `pooling` (TEI's --pooling): no Dense, no Normalize.
EmbeddingHead PoolingOnlyHead(const models::EncoderConfig& config, models::SentencePooling pooling);

// One varlen device batch through the encoder and `head`, under the engine's autocast, in
// inference mode, without a host sync: [n, dimension] fp32 embeddings, and with `token_states`
// the last layer's [T, hidden] fp32 token vectors too (else undefined).
struct BatchEmbeddings {
  at::Tensor embeddings;
  at::Tensor token_states;
};
BatchEmbeddings EmbedBatch(models::EncoderClassifierImpl& model, const batching::Batch& batch,
                           const EmbeddingHead& head, c10::DeviceType device, models::AmpMode amp,
                           bool token_states);

}  // namespace padless::serve::internal

#endif  // PADLESS_SERVE_EMBEDDING_HEAD_H_
