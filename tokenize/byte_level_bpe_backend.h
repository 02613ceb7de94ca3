// The byte-level BPE tokenizer backend of a Hugging Face tokenizer.json (RoBERTa, GPT-2 style
// ByteLevelBPETokenizer): added tokens matched in the raw text, then per remaining segment the
// ByteLevel pre-tokenizer (an optional prefix space, GPT-2's split, each byte as its byte-level
// character) and rank-based BPE merges per word, as Hugging Face `tokenizers` does, so the ids are
// the same. Decoding maps the byte-level characters back to bytes (the ByteLevel decoder).
// Offsets are tokenizers' too: a token spans the original characters its bytes come from (a piece
// that holds part of a character spans the whole character), an added token the whitespace its
// lstrip / rstrip took, and the post-processor's trim_offsets trims spaces (byte_level_offsets.h).
// The spec comes from hf_tokenizer_json.h, which validates it. No cache: the backend stays
// immutable, hence thread-safe, after construction.
#ifndef PADLESS_TOKENIZE_BYTE_LEVEL_BPE_BACKEND_H_
#define PADLESS_TOKENIZE_BYTE_LEVEL_BPE_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hf_tokenizer_spec.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

// Everything a byte-level BPE tokenizer.json says that changes ids or decoding.
struct ByteLevelBpeSpec : HfTokenizerSpec {
  // By rank (the first merge is applied first); both pieces and their concatenation are in the
  // vocabulary.
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<std::string> unk_token;  // model.unk_token: what a character outside the vocab is
  bool fuse_unk = false;
  bool ignore_merges = false;     // a word that is a piece is that piece, whatever the merges
  bool add_prefix_space = false;  // the ByteLevel pre-tokenizer's
  bool nfc = false;               // normalizer NFC (ModernBERT's), else none
  // RoBERTa's <s> a </s></s> b </s>, or BERT's [CLS] a [SEP] b [SEP] when the post_processor is
  // a TemplateProcessing of that shape (ModernBERT's).
  TemplateStyle template_style = TemplateStyle::kRoberta;
  // The post-processor's offset trimming (RobertaProcessing or ByteLevel; none for
  // TemplateProcessing or no post-processor) and the add_prefix_space it trims with.
  bool trim_offsets = false;
  bool trim_add_prefix_space = true;
};

class ByteLevelBpeBackend : public HfTokenizerJsonBackend<ByteLevelBpeSpec> {
 public:
  explicit ByteLevelBpeBackend(ByteLevelBpeSpec spec);

  std::string name() const override { return "byte-level BPE (tokenizer.json)"; }
  TemplateStyle template_style() const override { return spec_.template_style; }
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* ids) const override;
  absl::Status EncodeWithOffsets(absl::string_view text, std::vector<int32_t>* ids,
                                 std::vector<ByteSpan>* spans) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids) const override;
  absl::Status ExportHuggingFace(const std::string& dir) const override;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  // Added tokens as (content, index in spec_.added_tokens), longest first.
  using AddedList = std::vector<std::pair<std::u32string, size_t>>;
  struct Output;  // ids, and with offsets their spans and edge spaces (in the .cc)

  // Encode and EncodeWithOffsets are one path, so that their ids cannot differ; `spans` (may be
  // null) receives each id's bytes in `text`, trimmed as the post-processor trims them.
  void EncodeText(absl::string_view text, std::vector<int32_t>* ids,
                  std::vector<ByteSpan>* spans) const;
  // tokenizers' extract_and_normalize: `text` split at `tokens`; each piece between them is
  // encoded, or with `normalize` first NFC'd and split again at the normalized tokens.
  // `alignment` (null without offsets) holds the original bytes of each character of `text`.
  void EncodePiece(std::u32string_view text, const ByteSpan* alignment, const AddedList& tokens,
                   bool normalize, Output* out) const;
  // A segment of text between added tokens: prefix space, GPT-2 split, BPE per word. `alignment`
  // (null without `spans`) holds the original bytes of each character of `text`.
  void EncodeSegment(std::u32string_view text, const ByteSpan* alignment, std::vector<int32_t>* ids,
                     std::vector<ByteSpan>* spans) const;
  // One pre-tokenized word, already in byte-level characters (UTF-8). `ranges` (may be null)
  // receives, per id, the word's bytes (= byte-level characters) that the piece holds.
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids,
                  std::vector<ByteSpan>* ranges) const;
  // The ids of the word's characters; unknown ones become [UNK] (fused if fuse_unk) or vanish
  // without an unk_token, as in tokenizers. `ranges` as in EncodeWord.
  std::vector<int32_t> CharacterIds(std::string_view word, std::vector<ByteSpan>* ranges) const;
  // Applies the lowest-ranked merge of adjacent symbols (leftmost on ties) until none applies.
  // Symbols are ids; the merged ones replace their left side, and `ranges` (may be null) follow.
  void ApplyMerges(std::vector<int32_t>* symbols, std::vector<ByteSpan>* ranges) const;
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  int32_t model_unk_ = -1;                       // the id of model.unk_token, -1 without one
  absl::flat_hash_map<uint64_t, Merge> merges_;  // by PairKey(left id, right id)
  // Without a normalizer every added token is matched in the raw text (raw_added_). With NFC,
  // as in tokenizers, those of normalized false are matched in the raw text, and the others
  // (their content NFC'd) in the normalized pieces between them (normalized_added_).
  AddedList raw_added_;
  AddedList normalized_added_;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BYTE_LEVEL_BPE_BACKEND_H_
