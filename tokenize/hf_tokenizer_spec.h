// What every tokenizer.json backend shares, whatever the model type: what it keeps of its file
// (the text itself, the pieces by id: model vocabulary, then added tokens; the added tokens and
// the special ids), which hf_tokenizer_json.cc fills once for all model types, and the backend
// methods that need nothing else.
#ifndef PADLESS_TOKENIZE_HF_TOKENIZER_SPEC_H_
#define PADLESS_TOKENIZE_HF_TOKENIZER_SPEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "added_tokens.h"
#include "padless/tokenize/special_tokens.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

struct HfTokenizerSpec {
  std::string json;                 // the tokenizer.json text (Save and export write it back)
  std::vector<std::string> pieces;  // by id: the model vocabulary, then added tokens beyond it
  int32_t model_vocab_size = 0;     // ids [0, model_vocab_size) are the model's vocabulary
  std::vector<AddedToken> added_tokens;
  SpecialIds special_ids{};
};

// Piece -> id, of the model vocabulary only and of every piece (added tokens included, which win
// over a vocabulary piece of the same text, as in tokenizers).
struct PieceIndex {
  absl::flat_hash_map<std::string, int32_t> model_vocab;
  absl::flat_hash_map<std::string, int32_t> all_pieces;

  explicit PieceIndex(const HfTokenizerSpec& spec);
  // special_ids.unk for a piece that is not there.
  int32_t IdOf(absl::string_view piece, const SpecialIds& special_ids) const;
};

// The base of a tokenizer.json backend with the spec type `Spec` (derived from HfTokenizerSpec):
// owns the spec and its PieceIndex, and answers the questions the spec alone answers.
template <typename Spec>
class HfTokenizerJsonBackend : public TokenizerBackend {
 public:
  const SpecialIds& special_ids() const override { return spec_.special_ids; }
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.pieces.size()); }
  std::string IdToPiece(int32_t id) const override { return spec_.pieces[id]; }
  int32_t PieceToId(absl::string_view piece) const override {
    return index_.IdOf(piece, spec_.special_ids);
  }
  std::string Serialized() const override { return spec_.json; }
  std::string file_name() const override { return "tokenizer.json"; }

  const Spec& spec() const { return spec_; }

 protected:
  explicit HfTokenizerJsonBackend(Spec spec) : spec_(std::move(spec)), index_(spec_) {}

  const Spec spec_;
  const PieceIndex index_;
};

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_HF_TOKENIZER_SPEC_H_
