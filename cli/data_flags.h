// The one parser of the flags that say how a data file is read (--format, --text-field,
// --text-pair-field, --label-field, --skip-bad-rows) and how its texts become model input
// (--max-len, --truncation, --pair-truncation, --head-fraction). train, eval, predict, tokenize
// and bench-padding all parse them here, so a bad value gets the same check and the same message
// in each. Errors are InvalidArgument whose message starts with the flag as the user writes it
// ("--format: unknown data format 'xml' ..."); callers report them as usage errors (exit 2).
#ifndef PADLESS_CLI_DATA_FLAGS_H_
#define PADLESS_CLI_DATA_FLAGS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "padless/tokenize/corpus_reader.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::cli {

// require_label: false for data to predict on (an absent label is accepted).
absl::StatusOr<tokenize::ReaderOptions> ReaderOptionsFromFlags(bool require_label);

// The encode flags, with max_length from --max-len, which must be at least `min_max_len`
// (0 allows 0, which means no limit; a model needs 3: [CLS], one token, [SEP]).
absl::StatusOr<tokenize::EncodeOptions> EncodeOptionsFromFlags(int64_t min_max_len);

}  // namespace padless::cli

#endif  // PADLESS_CLI_DATA_FLAGS_H_
