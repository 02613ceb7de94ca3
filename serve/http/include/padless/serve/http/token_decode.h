// The text of token ids as Hugging Face `tokenizers`' Tokenizer::decode writes it, which is what
// text-embeddings-inference's /decode answers (core/src/tokenization.rs, decode_ids):
//   - skip_special_tokens true: the special tokens ([CLS], [SEP], [PAD], [MASK] and, for the
//     tokenizer.json backends, [UNK], which Hugging Face's files mark special) are dropped and the
//     rest decoded;
//   - false: every token is decoded in place, the special ones by their piece, through the
//     tokenizer's decoder: WordPiece puts a space before every token but the first that is not a
//     "##" continuation and cleans up each (" ," -> ","), so "[CLS] hello, world! [SEP]" and
//     "[CLS]ing"; byte-level BPE joins the tokens' bytes, so "<s> hello</s>".
// Exact for the WordPiece and byte-level BPE backends (checked against `tokenizers`:
// tests/serve/http/data/decode_goldens.json) with special tokens made of printable ASCII
// (byte-level BPE maps a special piece's characters through its byte alphabet, which leaves those
// unchanged). For the SentencePiece backends, skip_special_tokens false keeps the special pieces
// between the decoded runs of ordinary tokens, separated by spaces, an approximation.
#ifndef PADLESS_SERVE_HTTP_TOKEN_DECODE_H_
#define PADLESS_SERVE_HTTP_TOKEN_DECODE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::serve::http {

// InvalidArgument for an id outside the vocabulary (`tokenizers` drops those without a word).
absl::StatusOr<std::string> DecodeTokenIds(const tokenize::Tokenizer& tokenizer,
                                           absl::Span<const int32_t> ids, bool skip_special_tokens);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_TOKEN_DECODE_H_
