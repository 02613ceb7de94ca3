// Test models of the embedding and reranker parity tests (issue 44): tiny BERT encoders written
// as sentence-transformers directories (one per pooling mode, and one with Dense and Normalize
// modules) and as a cross-encoder (BertForSequenceClassification with one label), with a
// WordPiece tokenizer that padless and Hugging Face's `tokenizers` both read. The same bytes of
// weights on every run and every machine: the golden outputs of sentence-transformers in
// tests/serve/data/ (make_embedding_goldens.py) were computed from these directories, and record
// WeightsChecksum so that a change here shows as a drift, not as a parity failure.
#ifndef PADLESS_TESTS_SERVE_EMBEDDING_FIXTURES_H_
#define PADLESS_TESTS_SERVE_EMBEDDING_FIXTURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/models/encoder_config.h"
#include "padless/models/sentence_pooling.h"

namespace padless::serve::testing {

// The encoder: hidden 64, 2 layers, 4 heads, FFN 128, 64 positions; sentence-transformers cuts
// texts at kMaxSeqLength tokens (sentence_bert_config.json), so a long text is easy to write.
inline constexpr int64_t kEmbeddingHidden = 64;
inline constexpr int64_t kEmbeddingMaxPositions = 64;
inline constexpr int64_t kMaxSeqLength = 24;
inline constexpr int64_t kDenseOutFeatures = 48;  // the Dense module: 64 -> 48, Tanh

// One sentence-transformers directory: Transformer, Pooling(pooling), then with
// `dense_and_normalize` a Dense module (2_Dense) and a Normalize module (3_Normalize).
struct EmbeddingModelSpec {
  std::string name;  // the directory's name under the root WriteEmbeddingModelDirs writes
  models::SentencePooling pooling = models::SentencePooling::kMean;
  bool dense_and_normalize = false;
};

// st_cls, st_mean, st_max, st_weightedmean, st_lasttoken, st_mean_sqrt_len (one per pooling mode,
// all with the same encoder weights) and st_mean_dense_normalize.
std::vector<EmbeddingModelSpec> EmbeddingModelSpecs();
inline constexpr char kCrossEncoderName[] = "cross_encoder";

// config_sentence_transformers.json's prompts (no default prompt: sentence-transformers would put
// it before every text, and the engine leaves prompts to its callers).
inline constexpr char kQueryPromptName[] = "query";
inline constexpr char kQueryPrompt[] = "query: ";

// The encoder's shape with `vocab` pieces and `labels` labels (a BERT pooler head).
models::EncoderConfig EmbeddingEncoderConfig(int64_t vocab, int64_t labels);

// A lowercasing BERT WordPiece tokenizer.json (BertNormalizer, BertPreTokenizer, [CLS] a [SEP]
// and pair templates): special tokens, punctuation, digits, single letters and their ##
// continuations (so any ASCII word has pieces), about 150 whole words and a few CJK characters.
std::string EmbeddingTokenizerJson();

// Writes `spec`'s directory at `dir` (created): Hugging Face's BertModel layout (config.json,
// model.safetensors without the classifier and the "bert." prefix, as sentence-transformers
// checkpoints hold them), the tokenizer files, modules.json, 1_Pooling/config.json,
// sentence_bert_config.json, config_sentence_transformers.json, and the Dense and Normalize
// modules when asked.
absl::Status WriteSentenceTransformerDir(const std::string& dir, const EmbeddingModelSpec& spec);
// A cross-encoder at `dir`: BertForSequenceClassification with one label (its pooler and
// classifier trained, i.e. present) and the tokenizer files.
absl::Status WriteCrossEncoderDir(const std::string& dir);
// Every EmbeddingModelSpecs() directory and kCrossEncoderName under `root` (created).
absl::Status WriteEmbeddingModelDirs(const std::string& root);

// "fnv1a64:<16 hex digits>" over `dir`/model.safetensors and, when present,
// `dir`/2_Dense/model.safetensors: per file its relative name, then per tensor in name order its
// name, dtype, shape and bytes. make_embedding_goldens.py computes the same from the files
// sentence-transformers loaded.
absl::StatusOr<std::string> WeightsChecksum(const std::string& dir);

}  // namespace padless::serve::testing

#endif  // PADLESS_TESTS_SERVE_EMBEDDING_FIXTURES_H_
