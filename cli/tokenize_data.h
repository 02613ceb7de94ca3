// What the actions of `padless tokenize` share: the checks of their common flags, reading --data
// with the reader flags, loading --model after the flags of encode and stats are checked, and
// encoding a corpus with a progress line. Errors of the flags are usage errors (cli_util.h).
#ifndef PADLESS_CLI_TOKENIZE_DATA_H_
#define PADLESS_CLI_TOKENIZE_DATA_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::cli {

// --quiet: no progress output on stderr.
bool Quiet();

// The shared reader and encode flags (data_flags.h); their errors are usage errors here.
absl::StatusOr<corpus::ReaderOptions> ReaderFromFlags();
absl::StatusOr<tokenize::EncodeOptions> EncodeFromFlags();

// --threads, range-checked.
absl::StatusOr<int> ThreadsFromFlags();

// A usage error naming `name` as the user wrote it when `value` is empty.
absl::Status RequireFlag(const std::string& value, absl::string_view name);

// Reads --data with the flags' reader options and reports skipped rows and repaired text.
absl::StatusOr<corpus::RawCorpus> ReadData(const std::string& path);

// A tokenizer and the corpus read for it.
struct TokenizerAndCorpus {
  tokenize::Tokenizer tokenizer;
  corpus::RawCorpus corpus;
};

// Checks the flags of encode/stats (usage errors before any slow work) and loads --model.
absl::StatusOr<tokenize::Tokenizer> LoadTokenizer();

// Encodes `loaded.corpus` with --threads, with a progress line on stderr.
absl::StatusOr<corpus::TokenizedCorpus> EncodeLoaded(const TokenizerAndCorpus& loaded,
                                                     const corpus::LabelMap& labels,
                                                     const tokenize::EncodeOptions& encode);

void PrintReaderSummary(const corpus::ReadReport& report);

}  // namespace padless::cli

#endif  // PADLESS_CLI_TOKENIZE_DATA_H_
