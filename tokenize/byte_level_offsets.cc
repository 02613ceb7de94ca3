#include "byte_level_offsets.h"

#include <algorithm>

#include "bert_char_classes.h"
#include "byte_level_alphabet.h"

namespace padless::tokenize::internal {
namespace {

bool IsSpace(char32_t c) { return c == ByteToChar(' ') || IsWhitespace(c); }

// Byte offsets <-> character positions of one text.
class CharacterIndex {
 public:
  explicit CharacterIndex(const std::vector<ByteSpan>& characters) : characters_(characters) {}
  // The number of characters before byte `offset`, a character boundary.
  size_t CharactersBefore(size_t offset) const {
    return static_cast<size_t>(
        std::lower_bound(characters_.begin(), characters_.end(), offset,
                         [](const ByteSpan& c, size_t at) { return c.start < at; }) -
        characters_.begin());
  }
  // The byte offset where character `position` starts (the text's end past the last one).
  size_t Offset(size_t position) const {
    if (position < characters_.size()) return characters_[position].start;
    return characters_.empty() ? 0 : characters_.back().stop;
  }

 private:
  const std::vector<ByteSpan>& characters_;
};

}  // namespace

EdgeSpaces CountEdgeSpaces(std::u32string_view token) {
  EdgeSpaces edges;
  while (edges.leading < token.size() && IsSpace(token[edges.leading])) ++edges.leading;
  while (edges.trailing < token.size() && IsSpace(token[token.size() - 1 - edges.trailing])) {
    ++edges.trailing;
  }
  return edges;
}

void TrimByteLevelOffsets(const std::vector<ByteSpan>& characters,
                          const std::vector<EdgeSpaces>& edges, bool add_prefix_space,
                          std::vector<ByteSpan>* spans) {
  const CharacterIndex index(characters);
  for (size_t i = 0; i < spans->size() && i < edges.size(); ++i) {
    size_t leading = edges[i].leading;
    const size_t trailing = edges[i].trailing;
    if (leading == 0 && trailing == 0) continue;
    ByteSpan& span = (*spans)[i];
    size_t start = index.CharactersBefore(span.start);
    size_t stop = index.CharactersBefore(span.stop);
    if (leading > 0) {
      // tokenizers also counts a token at offset 0 as first (pre-tokenized input).
      const bool first = i == 0 || start == 0;
      if (first && add_prefix_space && leading == 1) leading = 0;
      start = std::min(start + leading, stop);
    }
    if (trailing > 0 && stop >= trailing) stop = std::max(stop - trailing, start);
    span = ByteSpan{index.Offset(start), index.Offset(stop)};
  }
}

}  // namespace padless::tokenize::internal
