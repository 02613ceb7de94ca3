// Tokenizer: a SentencePiece model with padless's fixed special tokens (special_tokens.h), model
// input templates ([CLS] a [SEP] and [CLS] a [SEP] b [SEP] with token type ids), truncation and
// overflow windows. Training, loading and saving .model files live here too. All methods are
// const and thread-safe after construction; errors come back as absl::Status, never exceptions.
#ifndef PADLESS_TOKENIZE_TOKENIZER_H_
#define PADLESS_TOKENIZE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/truncation.h"

namespace padless::tokenize {

namespace internal {
class SpmBackend;
}  // namespace internal

struct TrainOptions {
  std::string model_type = "unigram";  // "unigram" or "bpe"
  int vocab_size = 8000;               // special tokens and user symbols included
  // false: vocab_size is an upper bound, and a corpus too small for it gives a smaller vocabulary
  // (SentencePiece's hard_vocab_limit=false) instead of "Vocabulary size too high". Unigram only.
  bool hard_vocab_limit = true;
  double character_coverage = 0.9995;  // share of characters covered; the rest map to [UNK]
  std::vector<std::string> user_defined_symbols;  // always single pieces, ids from 5 on
  int64_t input_sentence_size = 0;                // sample this many sentences (0: use all)
  int64_t max_sentence_length = 1 << 16;  // bytes; longer sentences are skipped by SentencePiece
  int num_threads = 0;                    // 0: hardware concurrency
  bool verbose = false;                   // SentencePiece's training log on stderr
};

struct EncodeOptions {
  // Total length including the special tokens; 0 means no limit.
  int64_t max_length = 512;
  Truncation truncation = Truncation::kHeadTail;  // for single texts
  double head_fraction = kDefaultHeadFraction;    // head share of the budget for kHeadTail
  PairTruncation pair_truncation = PairTruncation::kLongestFirst;
};

// One model input. type_ids is empty for single texts; for pairs it is 0 over [CLS] a [SEP] and
// 1 over b [SEP].
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int8_t> type_ids;
};

class Tokenizer {
 public:
  // Loads a .model file; fails unless its special tokens sit at padless's fixed ids.
  static absl::StatusOr<Tokenizer> Load(const std::string& model_path);
  static absl::StatusOr<Tokenizer> FromSerialized(const std::string& serialized_model);
  // Trains on text files (one sentence per line) or on sentences held in memory.
  static absl::StatusOr<Tokenizer> TrainFromFiles(const std::vector<std::string>& files,
                                                  const TrainOptions& options);
  static absl::StatusOr<Tokenizer> TrainFromSentences(absl::Span<const std::string> sentences,
                                                      const TrainOptions& options);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the .model file (atomically: a temporary file, then rename).
  absl::Status Save(const std::string& model_path) const;
  std::string Serialized() const;

  int32_t vocab_size() const;
  // Empty string for an id outside [0, vocab_size).
  std::string IdToPiece(int32_t id) const;
  // kUnkId for a piece that is not in the vocabulary.
  int32_t PieceToId(absl::string_view piece) const;

  // The pieces of `text` without special tokens or truncation.
  absl::Status EncodePieces(absl::string_view text, std::vector<int32_t>* ids) const;
  absl::StatusOr<std::vector<int32_t>> EncodePieces(absl::string_view text) const;

  // [CLS] text [SEP], truncated to options.max_length. InvalidArgument when max_length cannot
  // hold the two special tokens.
  absl::StatusOr<Encoding> Encode(absl::string_view text, const EncodeOptions& options) const;
  // [CLS] first [SEP] second [SEP], truncated with options.pair_truncation.
  absl::StatusOr<Encoding> EncodePair(absl::string_view first, absl::string_view second,
                                      const EncodeOptions& options) const;
  // Every window of a long text as its own [CLS] window [SEP] input; consecutive windows share
  // `stride` tokens (for classifying long documents by voting over windows).
  absl::StatusOr<std::vector<Encoding>> EncodeWindows(absl::string_view text, int64_t max_length,
                                                      int64_t stride) const;

  // Appends the model input of (text[, pair]) to `ids` / `type_ids` (type ids only for pairs),
  // reusing `scratch` between calls: the allocation-free path of batch encoding.
  struct Scratch {
    std::vector<int> first;
    std::vector<int> second;
  };
  absl::Status EncodeAppend(absl::string_view text, const absl::string_view* pair,
                            const EncodeOptions& options, Scratch* scratch,
                            std::vector<int32_t>* ids, std::vector<int8_t>* type_ids) const;

  // Text of `ids`; special tokens are dropped. InvalidArgument for ids outside the vocabulary.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const;

 private:
  explicit Tokenizer(std::unique_ptr<internal::SpmBackend> backend);
  static absl::StatusOr<Tokenizer> FromBackend(std::unique_ptr<internal::SpmBackend> backend,
                                               const std::string& origin);

  std::unique_ptr<internal::SpmBackend> backend_;
};

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_TOKENIZER_H_
