// Hugging Face's BertPreTokenizer (tokenizers' pre_tokenizers/bert.rs): splits normalized text
// at whitespace, which is dropped, and around every punctuation character, which becomes a word
// of its own. Character classes: bert_char_classes.h.
#ifndef PADLESS_TOKENIZE_BERT_PRE_TOKENIZER_H_
#define PADLESS_TOKENIZE_BERT_PRE_TOKENIZER_H_

#include <string_view>
#include <vector>

namespace padless::tokenize::internal {

// Replaces *words with views into `text`, in order; no word is empty.
void BertPreTokenize(std::u32string_view text, std::vector<std::u32string_view>* words);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_BERT_PRE_TOKENIZER_H_
