// Reads a Hugging Face tokenizer.json and builds its backend, by model.type:
// - WordPiece (wordpiece_backend.h): normalizer BertNormalizer or none, pre_tokenizer
//   BertPreTokenizer, post_processor TemplateProcessing (in BERT's [CLS] $A [SEP] /
//   [CLS] $A [SEP] $B [SEP] shape), BertProcessing or none. [PAD] is padding.pad_id or the "[PAD]"
//   piece, [MASK] the "[MASK]" piece if any.
// - BPE (byte_level_bpe_backend.h; RoBERTa, GPT-2 style ByteLevelBPETokenizer): merges as
//   "a b" strings or [a, b] pairs, dropout null, continuing_subword_prefix / end_of_word_suffix
//   null or "", byte_fallback false, unk_token, fuse_unk and ignore_merges honoured; normalizer
//   none or NFC (nfc_normalizer.h), pre_tokenizer ByteLevel with use_regex true (add_prefix_space
//   either way), decoder ByteLevel or none, post_processor RobertaProcessing, TemplateProcessing
//   (in RoBERTa's <s> $A </s> / <s> $A </s> </s> $B </s> shape), ByteLevel or none. <s> is cls,
//   </s> sep, <pad> pad (or padding.pad_id), <unk> (or model.unk_token) unk, <mask> mask; padless
//   always frames texts with <s> ... </s>, also when the file's post_processor would not.
//   ModernBERT's (OLMo-derived) file instead has a TemplateProcessing in BERT's shape, [CLS] $A
//   [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1: then the special tokens are
//   [CLS] [SEP] [PAD] [MASK] and [UNK] (or model.unk_token), found by name as for WordPiece, and
//   texts and pairs are framed as BERT frames them, token types 0 and 1.
// Both: added_tokens (single_word is not supported) are matched in the text before
// pre-tokenization, as tokenizers does. The `truncation` and `padding` strategies of the file
// are ignored: padless truncates with EncodeOptions and pads in its batches. Every other
// model type or component is an error naming the file and the field, with code Unimplemented
// for a tokenizer type or option padless does not support and InvalidArgument for a broken file
// (bad JSON, missing fields, vocabulary ids out of range or duplicated, [UNK] missing, merges
// naming pieces outside the vocabulary).
#ifndef PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_
#define PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

// True when `bytes` starts (after whitespace) like a JSON object: what tells a tokenizer.json
// from a SentencePiece model proto.
bool LooksLikeJson(absl::string_view bytes);

// `origin` names the file in errors.
absl::StatusOr<std::unique_ptr<TokenizerBackend>> ParseTokenizerJson(const std::string& text,
                                                                     const std::string& origin);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_HF_TOKENIZER_JSON_H_
