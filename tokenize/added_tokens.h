// Hugging Face's added_tokens (special tokens such as [CLS] or <s>, and user tokens), shared by
// the tokenizer.json backends: what a token is, and tokenizers' split of a text at the tokens it
// holds, which happens before pre-tokenization.
#ifndef PADLESS_TOKENIZE_ADDED_TOKENS_H_
#define PADLESS_TOKENIZE_ADDED_TOKENS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace padless::tokenize::internal {

// One of tokenizers' added_tokens: matched before pre-tokenization, in the raw text, or (when
// `normalized`) with its normalized content in the normalized text. lstrip / rstrip: the match
// takes the whitespace to its left / right with it.
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
};

// tokenizers' added-token split: the leftmost-longest matches of `tokens` (longest first) in
// `text` go to `on_token` (with their index in `tokens`); the text between them (possibly empty)
// goes to `on_text`.
template <typename Char, typename Token, typename OnText, typename OnToken>
void SplitAtAddedTokens(std::basic_string_view<Char> text, const std::vector<Token>& tokens,
                        const OnText& on_text, const OnToken& on_token) {
  size_t start = 0;
  for (size_t i = 0; i < text.size() && !tokens.empty();) {
    const auto match = std::find_if(tokens.begin(), tokens.end(), [&](const Token& t) {
      return text.substr(i, t.first.size()) == t.first;
    });
    if (match == tokens.end()) {
      ++i;
      continue;
    }
    on_text(text.substr(start, i - start));
    on_token(static_cast<size_t>(match - tokens.begin()));
    i += match->first.size();
    start = i;
  }
  on_text(text.substr(start));
}

// Orders (content, ...) pairs longest content first, for the leftmost-longest match above.
template <typename Token>
void LongestFirst(std::vector<Token>* tokens) {
  std::stable_sort(tokens->begin(), tokens->end(),
                   [](const Token& a, const Token& b) { return a.first.size() > b.first.size(); });
}

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_ADDED_TOKENS_H_
