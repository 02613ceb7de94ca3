#include "padless/tokenize/utf8.h"

namespace padless::tokenize {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid; `*consumed` is then the
// length of its maximal invalid subpart (at least 1).
size_t SequenceLength(const unsigned char* s, size_t n, size_t i, size_t* consumed) {
  const unsigned char c = s[i];
  *consumed = 1;
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n) return 0;
    const unsigned char b = s[i + k];
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
    *consumed = k + 1;
  }
  return len;
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0, consumed = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = SequenceLength(s, n, i, &consumed);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

int64_t SanitizeUtf8(std::string* text) {
  if (IsValidUtf8(*text)) return 0;  // the common case: no copy
  const auto* s = reinterpret_cast<const unsigned char*>(text->data());
  const size_t n = text->size();
  std::string out;
  out.reserve(n + 16);
  int64_t replaced = 0;
  size_t i = 0, consumed = 0;
  while (i < n) {
    const size_t len = SequenceLength(s, n, i, &consumed);
    if (len > 0) {
      out.append(text->data() + i, len);
      i += len;
    } else {
      out.append(kReplacement);
      ++replaced;
      i += consumed;
    }
  }
  text->swap(out);
  return replaced;
}

}  // namespace padless::tokenize
