#include "bert_normalizer.h"

#include <vector>

#include <utf8proc.h>

#include "bert_char_classes.h"
#include "code_points.h"

namespace padless::tokenize::internal {
namespace {

// Keeps the alignment of a text in step with its characters; every method is a no-op without one.
class AlignmentBuilder {
 public:
  explicit AlignmentBuilder(const std::vector<ByteSpan>* in) : in_(in) {
    if (in_ != nullptr) out_.reserve(in_->size());
  }
  // `count` output characters stand for input character `i`.
  void Repeat(size_t i, size_t count) {
    if (in_ != nullptr) out_.insert(out_.end(), count, (*in_)[i]);
  }
  void MoveTo(std::vector<ByteSpan>* alignment) {
    if (alignment != nullptr) alignment->swap(out_);
  }

 private:
  const std::vector<ByteSpan>* in_;
  std::vector<ByteSpan> out_;
};

void CleanAndSpaceChinese(const BertNormalizerOptions& options, std::u32string* text,
                          std::vector<ByteSpan>* alignment) {
  std::u32string out;
  out.reserve(text->size());
  AlignmentBuilder aligned(alignment);
  for (size_t i = 0; i < text->size(); ++i) {
    const char32_t c = (*text)[i];
    if (options.clean_text) {
      if (c == 0 || c == 0xFFFD || IsControl(c)) continue;
      if (IsWhitespace(c)) {
        out.push_back(U' ');
        aligned.Repeat(i, 1);
        continue;
      }
    }
    if (options.handle_chinese_chars && IsChineseChar(c)) {
      out.append({U' ', c, U' '});
      aligned.Repeat(i, 3);
      continue;
    }
    out.push_back(c);
    aligned.Repeat(i, 1);
  }
  text->swap(out);
  aligned.MoveTo(alignment);
}

bool IsAscii(const std::u32string& text) {
  for (char32_t c : text) {
    if (c >= 0x80) return false;
  }
  return true;
}

// How many characters each character of `text` decomposes into (NFD). utf8proc_decompose, which
// makes the text, decomposes character by character too and then only reorders combining marks
// within their run, so the counts line up with its output.
void AlignDecomposition(const std::u32string& text, const std::vector<ByteSpan>& in,
                        std::vector<ByteSpan>* out) {
  out->clear();
  utf8proc_int32_t buffer[32];
  for (size_t i = 0; i < text.size(); ++i) {
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(text[i]),
                                                       buffer, 32, UTF8PROC_DECOMPOSE, &boundclass);
    out->insert(out->end(), n > 0 ? static_cast<size_t>(n) : size_t{1}, in[i]);
  }
}

// NFD (utf8proc_decompose does the canonical reordering too), then drop category Mn.
void StripAccents(std::u32string* text, std::vector<ByteSpan>* alignment) {
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
  std::vector<ByteSpan> decomposed;
  if (alignment != nullptr) {
    AlignDecomposition(*text, *alignment, &decomposed);
    // Cannot differ (see AlignDecomposition); if it ever did, every character keeps a span of
    // the text rather than reading past the end.
    decomposed.resize(static_cast<size_t>(n), decomposed.empty() ? ByteSpan{} : decomposed.back());
  }
  text->clear();
  AlignmentBuilder aligned(alignment != nullptr ? &decomposed : nullptr);
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    const auto c = static_cast<char32_t>(nfd[static_cast<size_t>(i)]);
    if (IsNonspacingMark(c)) continue;
    text->push_back(c);
    aligned.Repeat(static_cast<size_t>(i), 1);
  }
  aligned.MoveTo(alignment);
}

// Rust's char::to_lowercase: utf8proc's simple lowercase mapping, plus the one unconditional
// multi-character lowercase of SpecialCasing.txt (U+0130 İ -> i + U+0307 combining dot above).
void Lowercase(std::u32string* text, std::vector<ByteSpan>* alignment) {
  std::u32string out;
  out.reserve(text->size());
  AlignmentBuilder aligned(alignment);
  for (size_t i = 0; i < text->size(); ++i) {
    const char32_t c = (*text)[i];
    if (c == 0x130) {
      out.append({U'i', 0x307});
      aligned.Repeat(i, 2);
      continue;
    }
    out.push_back(c < 0x80 ? (c >= U'A' && c <= U'Z' ? c + 32 : c)
                           : static_cast<char32_t>(utf8proc_tolower(static_cast<int32_t>(c))));
    aligned.Repeat(i, 1);
  }
  text->swap(out);
  aligned.MoveTo(alignment);
}

}  // namespace

void BertNormalize(const BertNormalizerOptions& options, std::u32string* text,
                   std::vector<ByteSpan>* alignment) {
  if (options.clean_text || options.handle_chinese_chars) {
    CleanAndSpaceChinese(options, text, alignment);
  }
  if (options.strip_accents.value_or(options.lowercase)) StripAccents(text, alignment);
  if (options.lowercase) Lowercase(text, alignment);
}

}  // namespace padless::tokenize::internal
