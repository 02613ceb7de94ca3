// Hugging Face's BertNormalizer (tokenizers' normalizers/bert.rs), step for step on code points:
// clean_text (drop NUL, U+FFFD and control characters; every whitespace becomes a space),
// handle_chinese_chars (a space around each CJK ideograph), strip_accents (NFD, then drop
// non-spacing marks; unset means "as lowercase"), lowercase (Unicode lowercase mapping).
// Normalization data and case mappings come from utf8proc. Optionally each character carries the
// span of original bytes it stands for, as tokenizers' NormalizedString alignments do, so that
// tokens of the normalized text can be mapped back to the text the user gave.
#ifndef PADLESS_TOKENIZE_BERT_NORMALIZER_H_
#define PADLESS_TOKENIZE_BERT_NORMALIZER_H_

#include <optional>
#include <string>
#include <vector>

#include "byte_span.h"

namespace padless::tokenize::internal {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  // nullopt: strip accents when lowercasing (BERT's rule)
  bool lowercase = true;
};

// `alignment`, when given, holds the original span of each character of *text on entry and of each
// normalized character on return: a character produced from another (an accent stripped, a
// lowercase expansion, the spaces around a CJK ideograph) takes that character's span. The
// normalized text is the same with or without it.
void BertNormalize(const BertNormalizerOptions& options, std::u32string* text,
                   std::vector<ByteSpan>* alignment = nullptr);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BERT_NORMALIZER_H_
