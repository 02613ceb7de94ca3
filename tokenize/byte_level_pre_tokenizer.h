// The split of tokenizers' ByteLevel pre-tokenizer with use_regex (GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched by Oniguruma, leftmost-first), written out over code points with Unicode categories
// from utf8proc instead of a regex engine. \s is the White_Space property (bert_char_classes.h).
#ifndef PADLESS_TOKENIZE_BYTE_LEVEL_PRE_TOKENIZER_H_
#define PADLESS_TOKENIZE_BYTE_LEVEL_PRE_TOKENIZER_H_

#include <string_view>
#include <vector>

namespace padless::tokenize::internal {

// Appends the consecutive non-empty matches of the pattern, which cover `text`, to `words`.
void SplitGpt2Words(std::u32string_view text, std::vector<std::u32string_view>* words);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BYTE_LEVEL_PRE_TOKENIZER_H_
