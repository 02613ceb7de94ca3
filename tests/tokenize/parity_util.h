// What the parity tests against Hugging Face `tokenizers` share (WordPiece, byte-level BPE): the
// text sets the reference scripts encode, read the way those scripts read them, padless's ids in
// the scripts' line format, and a line-by-line comparison that names the differing texts.
#ifndef PADLESS_TESTS_TOKENIZE_PARITY_UTIL_H_
#define PADLESS_TESTS_TOKENIZE_PARITY_UTIL_H_

#include <cstddef>
#include <string>
#include <vector>

#include "padless/tokenize/tokenizer.h"

namespace padless::tokenize::testing {

std::vector<std::string> ReadLines(const std::string& path);

// The text column of a label<TAB>text file (first `limit` rows), read as the scripts read it.
std::vector<std::string> TsvTexts(const std::string& path, size_t limit);

struct TextSet {
  std::vector<std::string> first;
  std::vector<std::string> second;  // empty unless pairs
};

// "sst2" (every text of data/sst2_dev.tsv), "imdb" (the first `imdb_texts` of data/imdb_1k.tsv),
// "pairs" (consecutive sst2 texts) or "edge" (the JSON strings of `edge_jsonl`, one a line).
TextSet LoadTextSet(const std::string& name, const std::string& source_dir,
                    const std::string& edge_jsonl, size_t imdb_texts);

// padless's ids of every text, one space-separated line each (the CLI's --ids-out format), with
// the special tokens and without truncation.
std::vector<std::string> PadlessLines(const Tokenizer& tokenizer, const TextSet& set);

// Compares the first min(|want|, |got|) lines and requires `want` to have `min_lines`; reports
// the first mismatches with their text.
void ExpectSameIds(const std::vector<std::string>& want, const std::vector<std::string>& got,
                   const TextSet& set, size_t min_lines, const std::string& what);

}  // namespace padless::tokenize::testing

#endif  // PADLESS_TESTS_TOKENIZE_PARITY_UTIL_H_
