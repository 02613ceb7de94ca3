// The texts that `padless predict` and `padless embed` run a model on: stdin lines without --data,
// or --data as a TSV, CSV or JSONL corpus (by its extension or --format; labels optional and
// ignored), or any other file as plain text, one text per line. One reader, so that both commands
// take the same inputs.
#ifndef PADLESS_CLI_INPUT_TEXTS_H_
#define PADLESS_CLI_INPUT_TEXTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/corpus/corpus_reader.h"

namespace padless::cli {

// The texts of `data`, or of stdin when it is empty, in order. `reader` comes from
// ReaderOptionsFromFlags(/*require_label=*/false). Errors: the corpus reader's, or NotFound when
// a plain-text file cannot be opened.
absl::StatusOr<std::vector<std::string>> ReadInputTexts(const std::string& data,
                                                        const corpus::ReaderOptions& reader);

}  // namespace padless::cli

#endif  // PADLESS_CLI_INPUT_TEXTS_H_
