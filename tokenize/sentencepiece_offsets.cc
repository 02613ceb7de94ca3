#include "sentencepiece_offsets.h"

#include <algorithm>
#include <string>

#include "bert_char_classes.h"
#include "code_points.h"

namespace padless::tokenize::internal {

void AlignWithMetaspace(absl::string_view text, std::vector<ByteSpan>* spans) {
  std::vector<ByteSpan> chars;  // the bytes of each character
  const std::u32string code_points = DecodeUtf8(text, 0, &chars);
  // The index of the first character that starts at or after byte `offset`.
  const auto index_of = [&](size_t offset) {
    return static_cast<size_t>(
        std::lower_bound(chars.begin(), chars.end(), offset,
                         [](const ByteSpan& c, size_t at) { return c.start < at; }) -
        chars.begin());
  };
  size_t covered = 0;  // the end of the pieces so far
  for (ByteSpan& span : *spans) {
    const size_t first = index_of(span.start);
    const size_t end = index_of(span.stop);
    size_t last_space = first;
    for (size_t i = first; i < end && IsWhitespace(code_points[i]); ++i) last_space = i + 1;
    if (last_space > first) {
      span.start = chars[last_space - 1].start;  // the run's last character only
    } else if (first > 0 && chars[first - 1].start >= covered &&
               IsWhitespace(code_points[first - 1])) {
      span.start = chars[first - 1].start;  // the whitespace that SentencePiece stripped
    }
    if (span.start == span.stop) {
      if (const size_t i = index_of(span.start); i < chars.size()) span.stop = chars[i].stop;
    }
    covered = std::max(covered, span.stop);
  }
}

}  // namespace padless::tokenize::internal
