#include "nfc_normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>

namespace padless::tokenize::internal {
namespace {

// A character of the text being normalized and tokenizers' bookkeeping for it: 0 when it stands
// for one input character, +1 when inserted (a decomposition's later characters), -n when it also
// consumed the n characters after it (compositions).
struct Tracked {
  char32_t c;
  int64_t change;
};

int CombiningClass(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// Canonical decomposition (Hangul syllables included), character by character.
std::vector<Tracked> Decompose(const std::u32string& text) {
  std::vector<Tracked> out;
  out.reserve(text.size());
  utf8proc_int32_t buffer[32];
  for (char32_t c : text) {
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buffer, 32,
                                                       UTF8PROC_DECOMPOSE, &boundclass);
    if (n <= 0 || n > 32) {  // cannot happen for a valid code point; keep the character
      out.push_back({c, 0});
      continue;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i) {
      out.push_back({static_cast<char32_t>(buffer[i]), i == 0 ? 0 : 1});
    }
  }
  return out;
}

// Canonical ordering: each run of combining marks sorted by combining class, stably.
void Reorder(std::vector<Tracked>* chars) {
  const auto mark = [](const Tracked& t) { return CombiningClass(t.c) != 0; };
  for (auto it = chars->begin(); it != chars->end();) {
    if (!mark(*it)) {
      ++it;
      continue;
    }
    const auto end = std::find_if_not(it, chars->end(), mark);
    std::stable_sort(it, end, [](const Tracked& a, const Tracked& b) {
      return CombiningClass(a.c) < CombiningClass(b.c);
    });
    it = end;
  }
}

// The primary composite of `starter` and `c`, or 0 (composition exclusions and Hangul included).
char32_t Compose(char32_t starter, char32_t c) {
  utf8proc_int32_t pair[2] = {static_cast<utf8proc_int32_t>(starter),
                              static_cast<utf8proc_int32_t>(c)};
  const utf8proc_ssize_t n = utf8proc_normalize_utf32(pair, 2, UTF8PROC_COMPOSE);
  return n == 1 ? static_cast<char32_t>(pair[0]) : 0;
}

// Canonical composition (UAX #15): a character joins the last starter unless blocked by a
// character between them of class 0 or of a class not below its own.
void ComposeAll(std::vector<Tracked>* chars) {
  if (chars->empty()) return;
  size_t starter = 0;
  int last_class = CombiningClass((*chars)[0].c) == 0 ? 0 : 256;  // 256: no starter yet
  size_t kept = 1;
  for (size_t i = 1; i < chars->size(); ++i) {
    const Tracked t = (*chars)[i];
    const int cls = CombiningClass(t.c);
    // last_class 0: the starter is the character kept last, right before (Hangul L + V).
    if (last_class != 256 && (last_class < cls || last_class == 0)) {
      if (const char32_t composite = Compose((*chars)[starter].c, t.c); composite != 0) {
        (*chars)[starter].c = composite;
        (*chars)[starter].change += t.change - 1;
        continue;
      }
    }
    if (cls == 0) starter = kept;
    last_class = cls;
    (*chars)[kept++] = t;
  }
  chars->resize(kept);
}

}  // namespace

void NfcNormalize(std::u32string* text, std::vector<ByteSpan>* alignment) {
  if (std::all_of(text->begin(), text->end(), [](char32_t c) { return c < 0x80; })) return;
  std::vector<Tracked> chars = Decompose(*text);
  Reorder(&chars);
  ComposeAll(&chars);
  text->clear();
  for (const Tracked& t : chars) text->push_back(t.c);
  if (alignment == nullptr) return;
  // NormalizedString::transform: positions in the input advance by 1 - change for a consuming
  // character; an inserted one takes the span of the input character before it.
  std::vector<ByteSpan> aligned;
  aligned.reserve(chars.size());
  size_t at = 0;
  for (const Tracked& t : chars) {
    if (t.change > 0) {
      aligned.push_back(at > 0 ? (*alignment)[at - 1] : ByteSpan{});
      continue;
    }
    aligned.push_back(at < alignment->size() ? (*alignment)[at] : alignment->back());
    at += static_cast<size_t>(1 - t.change);
  }
  *alignment = std::move(aligned);
}

}  // namespace padless::tokenize::internal
