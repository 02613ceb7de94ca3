// Finds and builds the tokenizer backend of a file or a model directory, by content: a JSON
// object is a Hugging Face tokenizer.json, anything else must be a SentencePiece model proto
// (padless's layout; XLM-R's fairseq layout only as a directory's sentencepiece.bpe.model, see
// sentencepiece_model.h). A model directory holds
// tokenizer.model (padless), else tokenizer.json, else sentencepiece.bpe.model (XLM-R; also used
// when the directory's tokenizer.json is of a type padless does not read, as XLM-R's Unigram one).
#ifndef PADLESS_TOKENIZE_TOKENIZER_FILES_H_
#define PADLESS_TOKENIZE_TOKENIZER_FILES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tokenizer_backend.h"

namespace padless::tokenize::internal {

// `origin` names the source in errors; `xlmr`: a SentencePiece model is XLM-R's.
absl::StatusOr<std::unique_ptr<TokenizerBackend>> BackendFromBytes(const std::string& bytes,
                                                                   const std::string& origin,
                                                                   bool xlmr = false);
// NotFound for a missing path or a directory without a tokenizer file.
absl::StatusOr<std::unique_ptr<TokenizerBackend>> LoadBackend(const std::string& path);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_TOKENIZER_FILES_H_
