// The WordPiece tokenizer backend of a Hugging Face tokenizer.json (BERT, MiniLM, E5, BGE...):
// added tokens (raw ones before normalization, normalized ones after), BertNormalizer,
// BertPreTokenizer and greedy
// longest-match WordPiece with the continuing-subword prefix, as Hugging Face `tokenizers` does,
// so the ids are the same. Decoding joins continuation pieces like tokenizers' WordPiece decoder.
// Offsets follow the characters through normalization back to the original text, as tokenizers'
// alignments do: a piece spans the original bytes of its first to its last character.
// The spec comes from hf_tokenizer_json.h, which validates it.
#ifndef PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_
#define PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bert_normalizer.h"
#include "hf_tokenizer_spec.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

// Everything a WordPiece tokenizer.json says that changes ids or decoding.
struct WordPieceSpec : HfTokenizerSpec {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int64_t max_input_chars_per_word = 100;
  bool has_normalizer = true;
  BertNormalizerOptions normalizer;
  bool decode_cleanup = true;  // the WordPiece decoder's `cleanup`
};

class WordPieceBackend : public HfTokenizerJsonBackend<WordPieceSpec> {
 public:
  explicit WordPieceBackend(WordPieceSpec spec);

  std::string name() const override { return "WordPiece (tokenizer.json)"; }
  TemplateStyle template_style() const override { return TemplateStyle::kBert; }
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* ids) const override;
  absl::Status EncodeWithOffsets(absl::string_view text, std::vector<int32_t>* ids,
                                 std::vector<ByteSpan>* spans) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const override;
  absl::Status ExportHuggingFace(const std::string& dir) const override;

 private:
  // Encode and EncodeWithOffsets are one path, so that their ids cannot differ; `spans` (may be
  // null) receives each id's bytes in `text`.
  void EncodeText(std::string_view text, std::vector<int32_t>* ids,
                  std::vector<ByteSpan>* spans) const;
  // Normalizes text that holds no raw added token (at byte `base` of the input), then splits it
  // at normalized added tokens.
  void EncodeSegment(std::string_view text, size_t base, std::vector<int32_t>* ids,
                     std::vector<ByteSpan>* spans) const;
  // Pre-tokenizes normalized text without added tokens and splits each word. `alignment` (null
  // when `spans` is) holds the original span of each character of `text`.
  void EncodeWords(std::u32string_view text, const ByteSpan* alignment, std::vector<int32_t>* ids,
                   std::vector<ByteSpan>* spans) const;
  // Greedy longest-match of one pre-tokenized word; a word that cannot be covered is one [UNK].
  // `piece_ends` (may be null) receives, per id, the index in `word` of the piece's end.
  void EncodeWord(std::u32string_view word, std::vector<int32_t>* ids,
                  std::vector<size_t>* piece_ends) const;

  // (content, id), longest first for tokenizers' leftmost-longest match; normalized tokens hold
  // their normalized content.
  std::vector<std::pair<std::string, int32_t>> raw_added_;
  std::vector<std::pair<std::u32string, int32_t>> normalized_added_;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_
