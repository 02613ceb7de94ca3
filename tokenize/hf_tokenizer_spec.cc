#include "hf_tokenizer_spec.h"

namespace padless::tokenize::internal {

PieceIndex::PieceIndex(const HfTokenizerSpec& spec) {
  for (int32_t id = 0; id < static_cast<int32_t>(spec.pieces.size()); ++id) {
    if (id < spec.model_vocab_size) model_vocab.emplace(spec.pieces[id], id);
    all_pieces.emplace(spec.pieces[id], id);
  }
  for (const AddedToken& t : spec.added_tokens) all_pieces.insert_or_assign(t.content, t.id);
}

int32_t PieceIndex::IdOf(absl::string_view piece, const SpecialIds& special_ids) const {
  const auto it = all_pieces.find(piece);
  return it == all_pieces.end() ? special_ids.unk : it->second;
}

}  // namespace padless::tokenize::internal
