// The one parser of the flags that say how a data file is read (--format, --text-field,
// --text-pair-field, --label-field, --skip-bad-rows) and how its texts become model input
// (--max-len, --truncation, --pair-truncation, --head-fraction), and the one range check of the
// size flags (--max-len, --batch-size, --max-tokens, --threads). train, eval, predict, tokenize
// and bench-padding all parse them here, so a bad value gets the same check and the same message
// in each. Errors are usage errors (cli_util.h, exit 2) whose message starts with the flag as the
// user wrote it ("--format: unknown data format 'xml' ...", "--batch-size must be >= 1, got 0").
#ifndef PADLESS_CLI_DATA_FLAGS_H_
#define PADLESS_CLI_DATA_FLAGS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::cli {

// The smallest --max-len: [CLS], one token, [SEP].
inline constexpr int64_t kMinMaxLen = 3;

// Which size flags a subcommand reads (CheckSizeFlags).
enum SizeFlag : unsigned { kMaxLen = 1, kBatchSize = 2, kMaxTokens = 4, kThreads = 8 };

// Range checks of the size flags in `flags` (an OR of SizeFlag): --max-len >= kMinMaxLen,
// --batch-size >= 1, --max-tokens >= --max-len (a token budget holds at least one full row),
// --threads >= 0 (0: all cores).
absl::Status CheckSizeFlags(unsigned flags);

// require_label: false for data to predict on (an absent label is accepted).
absl::StatusOr<corpus::ReaderOptions> ReaderOptionsFromFlags(bool require_label);

// The encode flags, with max_length from --max-len (checked as CheckSizeFlags(kMaxLen)).
absl::StatusOr<tokenize::EncodeOptions> EncodeOptionsFromFlags();

}  // namespace padless::cli

#endif  // PADLESS_CLI_DATA_FLAGS_H_
