// The private interface behind Tokenizer's PIMPL: one implementation per tokenizer family
// (padless/XLM-R SentencePiece, Hugging Face WordPiece and byte-level BPE). A backend turns text
// into content ids (with their offsets when asked) and back; Tokenizer adds the input templates,
// truncation and windows on top, using the backend's special ids and template style, so those
// exist once for every backend. Implementations are immutable after construction and therefore
// thread-safe.
#ifndef PADLESS_TOKENIZE_TOKENIZER_BACKEND_H_
#define PADLESS_TOKENIZE_TOKENIZER_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "byte_span.h"
#include "padless/tokenize/special_tokens.h"

namespace padless::tokenize::internal {

// How special tokens frame the content: BERT's [CLS] a [SEP] / [CLS] a [SEP] b [SEP] with token
// types 0/1, or RoBERTa's <s> a </s> / <s> a </s></s> b </s> with all token types 0 (RoBERTa and
// XLM-R have a single token type).
enum class TemplateStyle { kBert, kRoberta };

class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;

  // A name for messages, e.g. "WordPiece (tokenizer.json)".
  virtual std::string name() const = 0;
  virtual const SpecialIds& special_ids() const = 0;
  virtual TemplateStyle template_style() const = 0;

  virtual int32_t vocab_size() const = 0;
  // `id` is in [0, vocab_size()).
  virtual std::string IdToPiece(int32_t id) const = 0;
  // special_ids().unk for a piece outside the vocabulary.
  virtual int32_t PieceToId(absl::string_view piece) const = 0;

  // Replaces *ids with the content ids of `text` (no special tokens added).
  virtual absl::Status Encode(absl::string_view text, std::vector<int32_t>* ids) const = 0;
  // The same ids, and in *spans the bytes of `text` each came from, as Hugging Face `tokenizers`
  // reports a token's offsets (into the original text, whatever normalization did).
  virtual absl::Status EncodeWithOffsets(absl::string_view text, std::vector<int32_t>* ids,
                                         std::vector<ByteSpan>* spans) const = 0;
  // Text of content ids (the caller has dropped the structural special tokens); ids are in range.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const = 0;

  // The backend's own file format (what Save writes, and what the cache fingerprints), and the
  // name that file has in a model directory.
  virtual std::string Serialized() const = 0;
  virtual std::string file_name() const = 0;
  // Writes the files of Hugging Face's AutoTokenizer into the existing directory `dir`.
  virtual absl::Status ExportHuggingFace(const std::string& dir) const = 0;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_TOKENIZER_BACKEND_H_
