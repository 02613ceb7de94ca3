// Reads a Hugging Face tokenizer.json into a WordPieceSpec. Supported: model WordPiece, normalizer
// BertNormalizer or none, pre_tokenizer BertPreTokenizer, post_processor TemplateProcessing (in
// BERT's [CLS] $A [SEP] / [CLS] $A [SEP] $B [SEP] shape), BertProcessing or none; added_tokens
// (raw or normalized; single_word is not supported). [PAD] is padding.pad_id or the "[PAD]"
// piece, [MASK] the "[MASK]" piece if any. The `truncation` and `padding` strategies of the file
// are ignored: padless truncates with EncodeOptions and pads in its batches. Every other
// model type or component is an error naming the file and the field, with code Unimplemented
// for a tokenizer type padless does not support and InvalidArgument for a broken file (bad JSON,
// missing fields, vocabulary ids out of range or duplicated, [UNK] missing).
#ifndef PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_
#define PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wordpiece_backend.h"

namespace padless::tokenize::internal {

// True when `bytes` starts (after whitespace) like a JSON object: what tells a tokenizer.json
// from a SentencePiece model proto.
bool LooksLikeJson(absl::string_view bytes);

// `origin` names the file in errors.
absl::StatusOr<WordPieceSpec> ParseTokenizerJson(const std::string& text,
                                                 const std::string& origin);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_
