// Hugging Face's offsets for the pieces of a SentencePiece model, made from SentencePiece's own.
// SentencePiece gives a piece its surface in the original text: NFKC and the like are undone, and
// a "▁" piece spans the whitespace before its word. Hugging Face's converted tokenizers
// (Precompiled normalizer, runs of spaces collapsed, Metaspace pre-tokenizer, as XLM-R's
// tokenizer.json) agree on that but for two things, which this adjusts:
// - a run of whitespace before a word: SentencePiece's "▁" piece spans the whole run, or, at the
//   start of the text, none of it; Hugging Face's spans the run's last character;
// - characters that normalization made of one original character (the dummy-prefix "▁" alone,
//   "L" of "ǈ" -> "Lj", "f" of "ﬁ"): SentencePiece gives that character to the last piece of the
//   expansion and nothing to the others; Hugging Face gives it to each of them.
// What still differs is rarer: control characters SentencePiece removes count toward the piece
// before them, and a few multi-character normalizations ("\r\n", combining sequences) align
// otherwise. (Compared on tests/tokenize/data/token_offsets/texts.jsonl with a tokenizer.json
// that transformers' XLMRobertaConverter made of the same model.)
#ifndef PADLESS_TOKENIZE_SENTENCEPIECE_OFFSETS_H_
#define PADLESS_TOKENIZE_SENTENCEPIECE_OFFSETS_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "byte_span.h"

namespace padless::tokenize::internal {

// Adjusts SentencePiece's spans of the pieces of `text`, in order, to Hugging Face's.
void AlignWithMetaspace(absl::string_view text, std::vector<ByteSpan>* spans);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_SENTENCEPIECE_OFFSETS_H_
