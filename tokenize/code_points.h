// UTF-8 <-> Unicode code points for the tokenizers that work on characters (WordPiece's
// normalizer, pre-tokenizer and longest-match), through utf8proc.
#ifndef PADLESS_TOKENIZE_CODE_POINTS_H_
#define PADLESS_TOKENIZE_CODE_POINTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "byte_span.h"

namespace padless::tokenize::internal {

// The code points of `text`; an invalid byte becomes U+FFFD (text from the corpus readers is
// already valid; this keeps the library total on any input).
std::u32string DecodeUtf8(absl::string_view text);
// The same code points, and in *spans the bytes of `text` each came from, shifted by `base` (the
// position of `text` in a larger input).
std::u32string DecodeUtf8(absl::string_view text, size_t base, std::vector<ByteSpan>* spans);
void AppendUtf8(char32_t c, std::string* out);
std::string EncodeUtf8(std::u32string_view text);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_CODE_POINTS_H_
