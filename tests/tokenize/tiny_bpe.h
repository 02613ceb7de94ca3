// A small byte-level BPE tokenizer.json written in the tests (Hugging Face's layout: vocab with
// [a, b] merges, added tokens, ByteLevel pre-tokenizer and decoder, RobertaProcessing), for
// backend details and broken files without the trained reference tokenizer.
#ifndef PADLESS_TESTS_TOKENIZE_TINY_BPE_H_
#define PADLESS_TESTS_TOKENIZE_TINY_BPE_H_

#include <nlohmann/json.hpp>

namespace padless::tokenize::testing {

// <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4 (lstrip), then a b c Ġ bc abc Ġa (ids 5..11); merges
// (b, c) then (Ġ, a); unk_token <unk>; add_prefix_space false. Hugging Face `tokenizers` gives
// "abc" -> 5 9 (10 with ignore_merges), "a x b" -> 5 8 3 8 6, "a  <mask> b" -> 5 4 8 6.
nlohmann::json TinyByteLevelBpeJson();

}  // namespace padless::tokenize::testing

#endif  // PADLESS_TESTS_TOKENIZE_TINY_BPE_H_
