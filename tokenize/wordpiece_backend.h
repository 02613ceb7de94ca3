// The WordPiece tokenizer backend of a Hugging Face tokenizer.json (BERT, MiniLM, E5, BGE...):
// added tokens (raw ones before normalization, normalized ones after), BertNormalizer,
// BertPreTokenizer and greedy
// longest-match WordPiece with the continuing-subword prefix, as Hugging Face `tokenizers` does,
// so the ids are the same. Decoding joins continuation pieces like tokenizers' WordPiece decoder.
// The spec comes from hf_tokenizer_json.h, which validates it.
#ifndef PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_
#define PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bert_normalizer.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

// One of tokenizers' added_tokens: matched before pre-tokenization, in the raw text, or (when
// `normalized`) with its normalized content in the normalized text.
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool normalized = false;
};

// Everything a WordPiece tokenizer.json says that changes ids or decoding.
struct WordPieceSpec {
  std::string json;                 // the tokenizer.json text (Save and export write it back)
  std::vector<std::string> pieces;  // by id: the model vocabulary, then added tokens beyond it
  int32_t model_vocab_size = 0;     // ids [0, model_vocab_size) are the WordPiece vocabulary
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int64_t max_input_chars_per_word = 100;
  bool has_normalizer = true;
  BertNormalizerOptions normalizer;
  std::vector<AddedToken> added_tokens;
  SpecialIds special_ids{};
  bool decode_cleanup = true;  // the WordPiece decoder's `cleanup`
};

class WordPieceBackend : public TokenizerBackend {
 public:
  explicit WordPieceBackend(WordPieceSpec spec);

  std::string name() const override { return "WordPiece (tokenizer.json)"; }
  const SpecialIds& special_ids() const override { return spec_.special_ids; }
  TemplateStyle template_style() const override { return TemplateStyle::kBert; }
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.pieces.size()); }
  std::string IdToPiece(int32_t id) const override { return spec_.pieces[id]; }
  int32_t PieceToId(absl::string_view piece) const override;
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* ids) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const override;
  std::string Serialized() const override { return spec_.json; }
  std::string file_name() const override { return "tokenizer.json"; }
  absl::Status ExportHuggingFace(const std::string& dir) const override;

  const WordPieceSpec& spec() const { return spec_; }

 private:
  // Normalizes text that holds no raw added token, then splits it at normalized added tokens.
  void EncodeSegment(std::string_view text, std::vector<int32_t>* ids) const;
  // Pre-tokenizes normalized text without added tokens and splits each word.
  void EncodeWords(std::u32string_view text, std::vector<int32_t>* ids) const;
  // Greedy longest-match of one pre-tokenized word; a word that cannot be covered is one [UNK].
  void EncodeWord(std::u32string_view word, std::vector<int32_t>* ids) const;

  WordPieceSpec spec_;
  absl::flat_hash_map<std::string, int32_t> vocab_;       // the WordPiece vocabulary only
  absl::flat_hash_map<std::string, int32_t> all_pieces_;  // vocabulary and added tokens
  // (content, id), longest first for tokenizers' leftmost-longest match; normalized tokens hold
  // their normalized content.
  std::vector<std::pair<std::string, int32_t>> raw_added_;
  std::vector<std::pair<std::u32string, int32_t>> normalized_added_;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_WORDPIECE_BACKEND_H_
