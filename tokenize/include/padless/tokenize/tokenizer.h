// Tokenizer: text to model input ids, with one of several backends behind a PIMPL:
// - a padless SentencePiece model with padless's fixed special tokens (special_tokens.h);
// - an XLM-R SentencePiece model (sentencepiece.bpe.model) with fairseq's id offset;
// - a Hugging Face WordPiece tokenizer.json (BERT, MiniLM, ...), with the ids its file gives;
// - a Hugging Face byte-level BPE tokenizer.json (RoBERTa, GPT-2-style ByteLevelBPETokenizer),
//   with RoBERTa's template (<s> a </s></s> b </s>) and the ids its file gives.
// On top of every backend: model input templates ([CLS] a [SEP] and [CLS] a [SEP] b [SEP] with
// token type ids, or RoBERTa's <s> a </s></s> b </s>), truncation and overflow windows, all with
// the backend's special_ids(). Training, loading and saving live here too. All methods are const
// and thread-safe after construction; errors come back as absl::Status, never exceptions.
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
#include "padless/tokenize/token.h"
#include "padless/tokenize/truncation.h"

namespace padless::tokenize {

namespace internal {
class TokenizerBackend;
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
// 1 over b [SEP] (RoBERTa-style templates: 0 everywhere, as those models have one token type).
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int8_t> type_ids;
};

// The names a model directory may hold its tokenizer under, in the order Tokenizer::Load tries
// them; Tokenizer::file_name() is one of them.
inline constexpr const char* kTokenizerFileNames[] = {"tokenizer.model", "tokenizer.json",
                                                      "sentencepiece.bpe.model"};

class Tokenizer {
 public:
  // Accepts a padless SentencePiece .model, a Hugging Face tokenizer.json (WordPiece or byte-level
  // BPE), or a model directory (tokenizer.model, else a tokenizer.json, else XLM-R's
  // sentencepiece.bpe.model with the fairseq id offset). Files are told apart by content, not by
  // name. A SentencePiece file without padless's special ids (e.g. a bare XLM-R model: pass its
  // directory), or a tokenizer.json of another type, is an error naming the file.
  static absl::StatusOr<Tokenizer> Load(const std::string& path);
  // The inverse of Serialized() for padless SentencePiece models (the model proto) and the
  // tokenizer.json backends, WordPiece and byte-level BPE (the tokenizer.json text); an XLM-R
  // model loads only from its directory (see Load).
  static absl::StatusOr<Tokenizer> FromSerialized(const std::string& serialized_model);
  // Trains on text files (one sentence per line) or on sentences held in memory.
  static absl::StatusOr<Tokenizer> TrainFromFiles(const std::vector<std::string>& files,
                                                  const TrainOptions& options);
  static absl::StatusOr<Tokenizer> TrainFromSentences(absl::Span<const std::string> sentences,
                                                      const TrainOptions& options);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the backend's own format (atomically: a temporary file, then rename): the .model file
  // for SentencePiece, tokenizer.json for WordPiece and byte-level BPE.
  absl::Status Save(const std::string& path) const;
  std::string Serialized() const;
  // The name of the tokenizer file in a model directory: "tokenizer.model" (padless
  // SentencePiece), "tokenizer.json" (WordPiece, byte-level BPE) or "sentencepiece.bpe.model"
  // (XLM-R, whose layout the name marks). Load(dir) finds each of them.
  std::string file_name() const;
  // Writes the files Hugging Face's AutoTokenizer reads into the existing directory `dir`
  // (tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab.txt for WordPiece,
  // vocab.json and merges.txt for byte-level BPE).
  // Unimplemented error, naming the backend, for backends that cannot be exported.
  absl::Status ExportHuggingFace(const std::string& dir) const;
  // The backend, for messages: e.g. "WordPiece (tokenizer.json)".
  std::string backend_name() const;

  // The ids of [PAD], [UNK], [CLS] (<s>), [SEP] (</s>) and [MASK] (-1 when absent). Batches are
  // padded with special_ids().pad.
  const SpecialIds& special_ids() const;

  int32_t vocab_size() const;
  // Empty string for an id outside [0, vocab_size).
  std::string IdToPiece(int32_t id) const;
  // special_ids().unk for a piece that is not in the vocabulary.
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

  // The tokens of `text` as Hugging Face `tokenizers` reports them (TEI's /tokenize): the ids of
  // Encode without truncation ([CLS] text [SEP] with add_special_tokens, else EncodePieces's),
  // each with its byte offsets into `text` and the bytes they hold (token.h). Offsets point into
  // the text as given, whatever normalization (lowercasing, accents, NFKC) made of it.
  absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text,
                                              bool add_special_tokens) const;

  // Text of `ids`; special tokens other than [UNK] are dropped. InvalidArgument for ids outside
  // the vocabulary.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const;

 private:
  explicit Tokenizer(std::unique_ptr<internal::TokenizerBackend> backend);

  std::unique_ptr<internal::TokenizerBackend> backend_;
};

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_TOKENIZER_H_
