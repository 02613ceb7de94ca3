// One token of a text as Hugging Face `tokenizers` reports it (Encoding's ids, tokens, offsets and
// special-tokens mask), which is what text-embeddings-inference's /tokenize answers.
#ifndef PADLESS_TOKENIZE_TOKEN_H_
#define PADLESS_TOKENIZE_TOKEN_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace padless::tokenize {

struct Token {
  int32_t id = 0;
  // A special token's own piece (e.g. "[CLS]", "<s>"); for any other token the bytes
  // text[start, stop) of the input it came from.
  std::string text;
  // The [CLS]/[SEP] (<s>/</s>) the input template adds. A special token written in the text
  // itself (a literal "[SEP]") is not: it came from the input and has offsets, as in `tokenizers`.
  bool special = false;
  // Byte offsets into the input, absent for special tokens ([UNK] is not one). start <= stop, both
  // on character boundaries; starts and stops never decrease along the tokens, but tokens may
  // share bytes (a byte-level BPE piece holding part of a multi-byte character, or a piece of
  // what normalization made of one character, spans the whole character) and may be empty
  // (`tokenizers` trims the spaces off a byte-level token that is only a space).
  std::optional<size_t> start;
  std::optional<size_t> stop;
};

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_TOKEN_H_
