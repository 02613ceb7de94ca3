// A small WordPiece tokenizer.json written in the tests (Hugging Face's layout: vocab, added
// tokens, BertNormalizer, BertPreTokenizer, TemplateProcessing), so WordPiece behaviour and broken
// files are tested without any downloaded tokenizer.
#ifndef PADLESS_TESTS_TOKENIZE_TINY_WORDPIECE_H_
#define PADLESS_TESTS_TOKENIZE_TINY_WORDPIECE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace padless::tokenize::testing {

// added_tokens entries for pieces[0..count): special, not normalized, no lstrip/rstrip.
nlohmann::json SpecialAddedTokens(const std::vector<std::string>& pieces, int count);
// [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, then hello world un ##aff ##able , ! a ##b cafe 中 ' s
// . (ids 5..18); max_input_chars_per_word 10; uncased BERT normalizer.
nlohmann::json TinyWordPieceJson();
// Writes `json` (dumped) to a fresh file under the test temp dir; returns its path.
std::string WriteTemp(const std::string& name, const std::string& content);

}  // namespace padless::tokenize::testing

#endif  // PADLESS_TESTS_TOKENIZE_TINY_WORDPIECE_H_
