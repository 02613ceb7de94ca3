#include "bert_normalizer.h"

#include <vector>

#include <utf8proc.h>

#include "bert_char_classes.h"
#include "code_points.h"

namespace padless::tokenize::internal {
namespace {

void CleanAndSpaceChinese(const BertNormalizerOptions& options, std::u32string* text) {
  std::u32string out;
  out.reserve(text->size());
  for (char32_t c : *text) {
    if (options.clean_text) {
      if (c == 0 || c == 0xFFFD || IsControl(c)) continue;
      if (IsWhitespace(c)) {
        out.push_back(U' ');
        continue;
      }
    }
    if (options.handle_chinese_chars && IsChineseChar(c)) {
      out.append({U' ', c, U' '});
      continue;
    }
    out.push_back(c);
  }
  text->swap(out);
}

bool IsAscii(const std::u32string& text) {
  for (char32_t c : text) {
    if (c >= 0x80) return false;
  }
  return true;
}

// NFD (utf8proc_decompose does the canonical reordering too), then drop category Mn.
void StripAccents(std::u32string* text) {
  if (IsAscii(*text)) return;  // NFD leaves ASCII alone and ASCII has no Mn
  const std::string utf8 = EncodeUtf8(*text);
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  const auto length = static_cast<utf8proc_ssize_t>(utf8.size());
  std::vector<utf8proc_int32_t> nfd(utf8.size() + 8);
  utf8proc_ssize_t n = utf8proc_decompose(
      bytes, length, nfd.data(), static_cast<utf8proc_ssize_t>(nfd.size()), UTF8PROC_DECOMPOSE);
  if (n > static_cast<utf8proc_ssize_t>(nfd.size())) {  // a longer decomposition: retry sized
    nfd.resize(static_cast<size_t>(n));
    n = utf8proc_decompose(bytes, length, nfd.data(), n, UTF8PROC_DECOMPOSE);
  }
  if (n < 0) return;  // only on invalid input, which EncodeUtf8 cannot produce
  text->clear();
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    const auto c = static_cast<char32_t>(nfd[static_cast<size_t>(i)]);
    if (!IsNonspacingMark(c)) text->push_back(c);
  }
}

// Rust's char::to_lowercase: utf8proc's simple lowercase mapping, plus the one unconditional
// multi-character lowercase of SpecialCasing.txt (U+0130 İ -> i + U+0307 combining dot above).
void Lowercase(std::u32string* text) {
  std::u32string out;
  out.reserve(text->size());
  for (char32_t c : *text) {
    if (c == 0x130) {
      out.append({U'i', 0x307});
      continue;
    }
    out.push_back(c < 0x80 ? (c >= U'A' && c <= U'Z' ? c + 32 : c)
                           : static_cast<char32_t>(utf8proc_tolower(static_cast<int32_t>(c))));
  }
  text->swap(out);
}

}  // namespace

void BertNormalize(const BertNormalizerOptions& options, std::u32string* text) {
  if (options.clean_text || options.handle_chinese_chars) CleanAndSpaceChinese(options, text);
  if (options.strip_accents.value_or(options.lowercase)) StripAccents(text);
  if (options.lowercase) Lowercase(text);
}

}  // namespace padless::tokenize::internal
