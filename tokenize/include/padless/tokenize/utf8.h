// UTF-8 repair for input text: invalid byte sequences become U+FFFD, one per maximal invalid
// subpart (the Unicode / WHATWG practice), and are counted, so bad input is neither a crash nor a
// silent change.
#ifndef PADLESS_TOKENIZE_UTF8_H_
#define PADLESS_TOKENIZE_UTF8_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace padless::tokenize {

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool IsValidUtf8(absl::string_view text);

// Replaces every invalid sequence of `text` with U+FFFD in place; returns how many were replaced.
int64_t SanitizeUtf8(std::string* text);

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_UTF8_H_
