// Writes a tokenizer.json tokenizer as the files Hugging Face's AutoTokenizer.from_pretrained
// reads: tokenizer.json (the source file, unchanged), tokenizer_config.json,
// special_tokens_map.json, and the slow tokenizer's vocabulary: vocab.txt (WordPiece, in id order,
// for BertTokenizer) or vocab.json and merges.txt (byte-level BPE, for RobertaTokenizer).
#ifndef PADLESS_TOKENIZE_HF_EXPORT_H_
#define PADLESS_TOKENIZE_HF_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "byte_level_bpe_backend.h"
#include "wordpiece_backend.h"

namespace padless::tokenize::internal {

absl::Status WriteWordPieceHfFiles(const WordPieceSpec& spec, const std::string& dir);
absl::Status WriteByteLevelBpeHfFiles(const ByteLevelBpeSpec& spec, const std::string& dir);

}  // namespace padless::tokenize::internal

#endif  // PADLESS_TOKENIZE_HF_EXPORT_H_
