#include "bert_pre_tokenizer.h"

#include "bert_char_classes.h"

namespace padless::tokenize::internal {

void BertPreTokenize(std::u32string_view text, std::vector<std::u32string_view>* words) {
  words->clear();
  size_t start = 0;  // start of the word being collected
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    const bool space = IsWhitespace(c);
    if (!space && !IsBertPunctuation(c)) continue;
    if (i > start) words->push_back(text.substr(start, i - start));
    if (!space) words->push_back(text.substr(i, 1));
    start = i + 1;
  }
  if (text.size() > start) words->push_back(text.substr(start));
}

}  // namespace padless::tokenize::internal
