// The description of a sentence-transformers model directory (issue 44), read without loading any
// weights: modules.json's pipeline (Transformer, then Pooling, then optional Dense layers, then an
// optional Normalize), the pooling module's config.json, each Dense module's config.json and the
// path of its weights, and config_sentence_transformers.json's prompts and similarity function.
// Everything the engine cannot reproduce exactly is refused here with a status naming the file
// (and field or module type), so that an embedding is never silently computed another way.
// A directory without modules.json is NotFound: a plain Hugging Face encoder, which callers embed
// with a pooling named by a flag (ParsePoolingMode, TEI's --pooling names).
#ifndef PADLESS_MODEL_FILES_SENTENCE_TRANSFORMERS_H_
#define PADLESS_MODEL_FILES_SENTENCE_TRANSFORMERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/models/sentence_pooling.h"

namespace padless::model_files {

// How a text's token vectors become one vector (sentence-transformers' Pooling modes): the
// network's enum, which models::PoolSequences runs.
using PoolingMode = models::SentencePooling;

// The canonical name: "cls", "mean", "max", "mean_sqrt_len", "weightedmean", "last-token".
absl::string_view PoolingModeName(PoolingMode mode);

// TEI's --pooling names and padless's aliases: cls, mean, max, mean_sqrt_len, weightedmean
// (weighted-mean), last-token (lasttoken, last_token). "splade" (a sparse vocabulary-sized output,
// not a pooling of hidden states) is Unimplemented; any other name is InvalidArgument listing the
// accepted ones.
absl::StatusOr<PoolingMode> ParsePoolingMode(absl::string_view name);

// A Dense module's activation (its config.json's activation_function, a torch class path).
enum class DenseActivation { kIdentity, kTanh, kRelu, kGelu, kSigmoid };

// config_sentence_transformers.json's similarity_fn_name.
enum class SimilarityFunction { kCosine, kDot, kEuclidean, kManhattan };

absl::string_view SimilarityFunctionName(SimilarityFunction similarity);

// One sentence_transformers.models.Dense module: y = activation(x W^T + b).
struct DenseLayer {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  DenseActivation activation = DenseActivation::kTanh;  // sentence-transformers' default
  std::string weights_path;  // <module dir>/model.safetensors, else <module dir>/pytorch_model.bin
};

struct SentenceTransformerSpec {
  // The Transformer module's directory (the model directory itself for path ""), which holds the
  // Hugging Face config.json, weights and tokenizer.
  std::string transformer_dir;
  // sentence_bert_config.json's max_seq_length in the Transformer's directory; 0 when absent.
  int64_t max_seq_length = 0;
  PoolingMode pooling = PoolingMode::kMean;
  int64_t word_embedding_dimension = 0;  // the width pooling reads (the encoder's hidden size)
  bool include_prompt = true;            // false: the prompt's tokens are left out of the pooling
  std::vector<DenseLayer> dense;  // in pipeline order; each one's in_features is the last's out
  bool normalize = false;         // a Normalize module ends the pipeline (unit L2 norm)
  std::map<std::string, std::string> prompts;  // prompt name -> text put before the input
  std::string default_prompt_name;             // "" when none; otherwise a key of `prompts`
  SimilarityFunction similarity = SimilarityFunction::kCosine;

  // The width of the vectors the pipeline returns: the last Dense's out_features, else the
  // pooling's width.
  int64_t embedding_dimension() const {
    return dense.empty() ? word_embedding_dimension : dense.back().out_features;
  }
};

// Reads the sentence-transformers description of `dir`. Errors, each naming the file:
//   NotFound            `dir`/modules.json does not exist (not a sentence-transformers directory);
//   InvalidArgument     malformed JSON, a field of the wrong type or missing, no pooling mode on,
//                       a module path that is absolute or climbs out with "..", no Transformer or
//                       no Pooling module, Dense widths that do not chain, an unknown
//                       default_prompt_name or similarity_fn_name;
//   FailedPrecondition  a file modules.json promises is missing (a module's config.json, a Dense
//                       module's weights), or is not a regular file;
//   Unimplemented       a module type other than Transformer, Pooling, Dense and Normalize, modules
//                       in another order, several pooling modes at once (concatenated), an
//                       unsupported activation, a model_type other than SentenceTransformer.
// Missing pooling_mode_* fields take sentence-transformers' defaults (mean on, the rest off).
absl::StatusOr<SentenceTransformerSpec> ReadSentenceTransformerDir(const std::string& dir);

}  // namespace padless::model_files

#endif  // PADLESS_MODEL_FILES_SENTENCE_TRANSFORMERS_H_
