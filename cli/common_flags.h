// Flags shared by several subcommands (absl flags are process-global, so a flag such as --data is
// defined once here and read by every subcommand that takes it). A flag read by one subcommand
// only is defined in that subcommand's file; no subcommand file declares another one's flags.
// The reader and encode flags are parsed in data_flags.h.
#ifndef PADLESS_CLI_COMMON_FLAGS_H_
#define PADLESS_CLI_COMMON_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, data);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, out);
// Shared by train and prune.
ABSL_DECLARE_FLAG(std::string, dev);
ABSL_DECLARE_FLAG(std::optional<double>, lr);
ABSL_DECLARE_FLAG(int64_t, max_len);
ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, svg);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, skip_bad_rows);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(bool, quiet);
// Sizes shared by tokenize train, train, eval, predict and bench-padding.
ABSL_DECLARE_FLAG(int, vocab_size);
ABSL_DECLARE_FLAG(int64_t, batch_size);
// Empty: `train` derives the budget from the corpus (train::DefaultTokenBudget); the other
// commands use MaxTokensFromFlag().
ABSL_DECLARE_FLAG(std::optional<int64_t>, max_tokens);
// The batching strategy of train and eval.
ABSL_DECLARE_FLAG(std::string, batching);
// How text becomes model input (read by every command that tokenizes data).
ABSL_DECLARE_FLAG(std::string, truncation);
ABSL_DECLARE_FLAG(std::string, pair_truncation);
ABSL_DECLARE_FLAG(double, head_fraction);
ABSL_DECLARE_FLAG(std::string, text_field);
ABSL_DECLARE_FLAG(std::string, text_pair_field);
ABSL_DECLARE_FLAG(std::string, label_field);
// The sentence pooling that makes a model an embedding model (TEI's --pooling): embed (and serve).
ABSL_DECLARE_FLAG(std::string, pooling);

namespace padless::cli {

// --max-tokens of the commands without a corpus to derive it from (eval, predict,
// bench-padding): the flag's value, or 16384 (train::kMaxDefaultTokensPerBatch) when empty.
int64_t MaxTokensFromFlag();

}  // namespace padless::cli

#endif  // PADLESS_CLI_COMMON_FLAGS_H_
