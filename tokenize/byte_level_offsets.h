// tokenizers' trimming of byte-level token offsets (processors/byte_level.rs, process_offsets),
// which the RobertaProcessing and ByteLevel post-processors apply when their trim_offsets is set:
// the spaces at either end of a token ('Ġ' or whitespace) are taken off its offsets, so " world"
// reports "world" and a token of spaces alone an empty span. A first token keeps the one leading
// space that add_prefix_space may have put there. tokenizers counts those spaces in characters and
// takes them off offsets in the unit it reports: Python's `encode`, which the goldens come from,
// reports characters, so the trim here steps over whole characters too. (Rust's byte offsets step
// over bytes, which differs only where the space stands for a multi-byte character, as the prefix
// space before "İ": Rust's offsets then end inside the character, Python's and these do not.)
#ifndef PADLESS_TOKENIZE_BYTE_LEVEL_OFFSETS_H_
#define PADLESS_TOKENIZE_BYTE_LEVEL_OFFSETS_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "byte_span.h"

namespace padless::tokenize::internal {

// How many characters at the start and at the end of a token are 'Ġ' or whitespace.
struct EdgeSpaces {
  size_t leading = 0;
  size_t trailing = 0;
};
EdgeSpaces CountEdgeSpaces(std::u32string_view token);

// Trims spans[i] by edges[i] (one per token of the text, special tokens excluded).
// `characters` holds the bytes of each character of the text, in order, and every span starts
// and stops at a character boundary; `add_prefix_space` is the post-processor's.
void TrimByteLevelOffsets(const std::vector<ByteSpan>& characters,
                          const std::vector<EdgeSpaces>& edges, bool add_prefix_space,
                          std::vector<ByteSpan>* spans);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BYTE_LEVEL_OFFSETS_H_
