#include "code_points.h"

#include <utf8proc.h>

namespace padless::tokenize::internal {
namespace {

// Calls on_char(code point, byte offset, byte length) for each character of `text`.
template <typename OnChar>
void ForEachCodePoint(absl::string_view text, const OnChar& on_char) {
  const auto* begin = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto* p = begin;
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    // ASCII needs no decoder; it is most of the text.
    if (*p < 0x80) {
      on_char(static_cast<char32_t>(*p), static_cast<size_t>(p - begin), size_t{1});
      ++p;
      --left;
      continue;
    }
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {
      c = 0xFFFD;
      n = 1;
    }
    on_char(static_cast<char32_t>(c), static_cast<size_t>(p - begin), static_cast<size_t>(n));
    p += n;
    left -= n;
  }
}

}  // namespace

std::u32string DecodeUtf8(absl::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t c, size_t, size_t) { out.push_back(c); });
  return out;
}

std::u32string DecodeUtf8(absl::string_view text, size_t base, std::vector<ByteSpan>* spans) {
  std::u32string out;
  out.reserve(text.size());
  spans->clear();
  spans->reserve(text.size());
  ForEachCodePoint(text, [&](char32_t c, size_t offset, size_t length) {
    out.push_back(c);
    spans->push_back(ByteSpan{base + offset, base + offset + length});
  });
  return out;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
    return;
  }
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
  out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

std::string EncodeUtf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) AppendUtf8(c, &out);
  return out;
}

}  // namespace padless::tokenize::internal
