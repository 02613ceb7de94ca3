// Hugging Face's BertNormalizer (tokenizers' normalizers/bert.rs), step for step on code points:
// clean_text (drop NUL, U+FFFD and control characters; every whitespace becomes a space),
// handle_chinese_chars (a space around each CJK ideograph), strip_accents (NFD, then drop
// non-spacing marks; unset means "as lowercase"), lowercase (Unicode lowercase mapping).
// Normalization data and case mappings come from utf8proc.
#ifndef PADLESS_TOKENIZE_BERT_NORMALIZER_H_
#define PADLESS_TOKENIZE_BERT_NORMALIZER_H_

#include <optional>
#include <string>

namespace padless::tokenize::internal {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  // nullopt: strip accents when lowercasing (BERT's rule)
  bool lowercase = true;
};

void BertNormalize(const BertNormalizerOptions& options, std::u32string* text);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BERT_NORMALIZER_H_
