// A half-open range [start, stop) of bytes in a backend's input text: where a token came from, or
// which original bytes a normalized character stands for. Offsets reported to users are built
// from these (padless/tokenize/token.h).
#ifndef PADLESS_TOKENIZE_BYTE_SPAN_H_
#define PADLESS_TOKENIZE_BYTE_SPAN_H_

#include <cstddef>

namespace padless::tokenize::internal {

struct ByteSpan {
  size_t start = 0;
  size_t stop = 0;
};

// The span from the start of `first` to the end of `last` (the characters of one token).
inline ByteSpan Cover(const ByteSpan& first, const ByteSpan& last) {
  return ByteSpan{first.start, last.stop};
}

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BYTE_SPAN_H_
