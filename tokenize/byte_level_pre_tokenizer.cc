#include "byte_level_pre_tokenizer.h"

#include <utf8proc.h>

#include "bert_char_classes.h"

namespace padless::tokenize::internal {
namespace {

bool IsLetter(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool IsNumber(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool IsOther(char32_t c) { return !IsWhitespace(c) && !IsLetter(c) && !IsNumber(c); }

// The length of 's 't 're 've 'm 'll 'd at `i` (case-sensitive, ASCII apostrophe), else 0.
size_t ContractionLength(std::u32string_view text, size_t i) {
  if (text[i] != U'\'') return 0;
  for (std::u32string_view suffix : {U"s", U"t", U"re", U"ve", U"m", U"ll", U"d"}) {
    if (text.substr(i + 1, suffix.size()) == suffix) return suffix.size() + 1;
  }
  return 0;
}

// ` ?X+` at `i`: an optional space, then one or more characters of class X; 0 if none.
template <typename Class>
size_t SpaceThenRun(std::u32string_view text, size_t i, const Class& in_class) {
  size_t j = i + (text[i] == U' ' ? 1 : 0);
  const size_t run_start = j;
  while (j < text.size() && in_class(text[j])) ++j;
  return j > run_start ? j - i : 0;
}

// `\s+(?!\S)|\s+` at a whitespace character: the whole run when it ends the text or when it is
// one character; otherwise the run less its last character, which then opens the next word
// (" ?\p{L}+" takes a single space along).
size_t WhitespaceLength(std::u32string_view text, size_t i) {
  size_t j = i;
  while (j < text.size() && IsWhitespace(text[j])) ++j;
  const size_t run = j - i;
  if (j == text.size() || run == 1) return run;
  return run - 1;
}

size_t MatchLength(std::u32string_view text, size_t i) {
  if (const size_t n = ContractionLength(text, i); n > 0) return n;
  if (const size_t n = SpaceThenRun(text, i, IsLetter); n > 0) return n;
  if (const size_t n = SpaceThenRun(text, i, IsNumber); n > 0) return n;
  if (const size_t n = SpaceThenRun(text, i, IsOther); n > 0) return n;
  // Only whitespace is left: every character is a letter, a number, whitespace or other.
  return WhitespaceLength(text, i);
}

}  // namespace

void SplitGpt2Words(std::u32string_view text, std::vector<std::u32string_view>* words) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = MatchLength(text, i);
    words->push_back(text.substr(i, n));
    i += n;
  }
}

}  // namespace padless::tokenize::internal
