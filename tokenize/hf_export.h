// Writes a WordPiece tokenizer as the files Hugging Face's AutoTokenizer.from_pretrained reads:
// tokenizer.json (the source file, unchanged), vocab.txt (the WordPiece vocabulary in id order,
// for the slow BertTokenizer), tokenizer_config.json and special_tokens_map.json.
#ifndef PADLESS_TOKENIZE_HF_EXPORT_H_
#define PADLESS_TOKENIZE_HF_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "wordpiece_backend.h"

namespace padless::tokenize::internal {

absl::Status WriteWordPieceHfFiles(const WordPieceSpec& spec, const std::string& dir);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_HF_EXPORT_H_
