// Unicode NFC as Hugging Face `tokenizers` applies it (normalizers/unicode.rs, through the
// unicode-normalization-alignments crate), with tokenizers' alignments: each character is
// decomposed (its first character "consumes" it, the others are inserted), combining marks are
// reordered (a mark carries its bookkeeping along), and each composition makes the starter consume
// one more character. Alignments are then handed out by position, as NormalizedString's
// transform does: a character that consumes n characters of the input takes the span of the first
// of them, an inserted character the span of the last one consumed before it. So a composed "é"
// from "e" + U+0301 spans only the "e"; a token over it still ends after U+0301 when the next
// character follows, and ends inside it when "é" is the token's last character — exactly as
// tokenizers reports it. Normalization data comes from utf8proc.
#ifndef PADLESS_TOKENIZE_NFC_NORMALIZER_H_
#define PADLESS_TOKENIZE_NFC_NORMALIZER_H_

#include <string>
#include <vector>

#include "byte_span.h"

namespace padless::tokenize::internal {

// Replaces *text with its NFC. `alignment`, when given, holds the original span of each character
// on entry and of each normalized character on return.
void NfcNormalize(std::u32string* text, std::vector<ByteSpan>* alignment = nullptr);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_NFC_NORMALIZER_H_
