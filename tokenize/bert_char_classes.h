// The character classes of Hugging Face's BERT normalizer and pre-tokenizer (tokenizers'
// normalizers/bert.rs and pre_tokenizers/bert.rs), defined on Unicode general categories from
// utf8proc so that no Unicode table is written by hand here. Each function says which Rust
// predicate it reproduces.
#ifndef PADLESS_TOKENIZE_BERT_CHAR_CLASSES_H_
#define PADLESS_TOKENIZE_BERT_CHAR_CLASSES_H_

namespace padless::tokenize::internal {

// Rust's char::is_whitespace (the White_Space property): Zs, Zl, Zp, U+0009..U+000D and U+0085.
bool IsWhitespace(char32_t c);
// tokenizers' is_control: general category C* (Cc, Cf, Cn, Co, Cs) except \t \n \r.
bool IsControl(char32_t c);
// tokenizers' is_chinese_char: the CJK Unified Ideographs blocks BERT's original code lists.
bool IsChineseChar(char32_t c);
// tokenizers' is_bert_punc: ASCII punctuation (which includes symbols such as $ + < = > ^ ` | ~)
// or general category P*.
bool IsBertPunctuation(char32_t c);
// General category Mn, what strip_accents removes after NFD.
bool IsNonspacingMark(char32_t c);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BERT_CHAR_CLASSES_H_
