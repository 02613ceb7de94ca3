// padless bench-padding: tokenizes a labeled data file and compares padding strategies on it, one
// row per strategy (efficiency, batches, shapes, tokens per batch, plan and collate time), as a
// table on stdout and optionally as CSV and an SVG bar chart. The work is in
// padless/batching/padding_report.h; this file parses flags and prints.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "flag_spelling.h"
#include "padless/batching/padding_report.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/corpus/batch_encoder.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/corpus/label_map.h"
#include "padless/tokenize/tokenizer.h"
#include "path_checks.h"
#include "subcommand.h"
#include "tokenizer_flag.h"

namespace padless::cli {
namespace {

constexpr absl::string_view kCommand = "bench-padding";

int RunBenchPadding(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(kCommand, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string data = absl::GetFlag(FLAGS_data);
  const std::string model = absl::GetFlag(FLAGS_model);
  const int64_t max_len = absl::GetFlag(FLAGS_max_len);
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const int64_t max_tokens = MaxTokensFromFlag();  // checked by CheckSizeFlags
  if (data.empty()) return Usage(kCommand, absl::StrCat(FlagAsWritten("data"), " is required"));
  if (model.empty()) return Usage(kCommand, absl::StrCat(FlagAsWritten("model"), " is required"));
  absl::StatusOr<corpus::ReaderOptions> reader = ReaderOptionsFromFlags(/*require_label=*/true);
  if (!reader.ok()) return ReportError(kCommand, reader.status());
  absl::StatusOr<tokenize::EncodeOptions> encode_options = EncodeOptionsFromFlags();
  if (!encode_options.ok()) return ReportError(kCommand, encode_options.status());
  if (absl::Status s = CheckSizeFlags(kMaxLen | kBatchSize | kMaxTokens | kThreads); !s.ok()) {
    return ReportError(kCommand, s);
  }
  if (absl::Status s = CheckPathFlags({{"data", data, PathUse::kInputTextFile},
                                       TokenizerPathFlag("model", model),
                                       {"csv", absl::GetFlag(FLAGS_csv), PathUse::kOutputFile},
                                       {"svg", absl::GetFlag(FLAGS_svg), PathUse::kOutputFile}});
      !s.ok()) {
    return ReportError(kCommand, s);
  }

  absl::StatusOr<tokenize::Tokenizer> tokenizer = tokenize::Tokenizer::Load(model);
  if (!tokenizer.ok()) return Fail(kCommand, tokenizer.status());
  absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(data, *reader);
  if (!raw.ok()) return Fail(kCommand, raw.status());
  const corpus::LabelMap labels = corpus::LabelMap::FromCorpus(*raw);
  corpus::BatchEncodeOptions encode;
  encode.encode = *encode_options;
  encode.num_threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<corpus::TokenizedCorpus> corpus =
      corpus::EncodeCorpus(*tokenizer, *raw, labels, encode);
  if (!corpus.ok()) return Fail(kCommand, corpus.status());
  if (!absl::GetFlag(FLAGS_quiet)) {
    absl::FPrintF(stderr, "%s: %s; %d tokens after truncation to %d\n", data, raw->report.Summary(),
                  corpus->total_tokens(), max_len);
  }

  absl::StatusOr<std::vector<batching::StrategyRow>> rows = batching::ComparePaddingStrategies(
      *corpus,
      batching::StandardStrategies(max_len, batch_size, max_tokens, absl::GetFlag(FLAGS_seed)));
  if (!rows.ok()) return Fail(kCommand, rows.status());
  absl::PrintF("%s", batching::FormatTable(*rows));
  const std::string csv = absl::GetFlag(FLAGS_csv);
  if (!csv.empty()) {
    if (absl::Status s = base::WriteFileAtomically(csv, batching::FormatCsv(*rows)); !s.ok())
      return Fail(kCommand, s);
  }
  const std::string svg = absl::GetFlag(FLAGS_svg);
  if (!svg.empty()) {
    const std::string title =
        absl::StrFormat("Padding efficiency, %s, max_len %d, batch %d",
                        data.substr(data.find_last_of('/') + 1), max_len, batch_size);
    if (absl::Status s = base::WriteFileAtomically(svg, batching::FormatSvg(*rows, title));
        !s.ok())
      return Fail(kCommand, s);
  }
  return kExitOk;
}

}  // namespace

const Subcommand kBenchPaddingCommand = {
    "bench-padding",
    "compare padding, bucketing and packing strategies on a data file",
    "usage: padless bench-padding --data FILE --model M.model|MODEL_DIR [--max-len 512]\n"
    "       [--batch-size 32] [--max-tokens 16384] [--csv PATH] [--svg PATH]\n\n"
    "Tokenizes FILE (truncating to --max-len), plans one epoch with every strategy, collates it,\n"
    "and prints one row per strategy: padding_efficiency (real tokens / token slots), batches,\n"
    "distinct_shapes, tokens_per_batch_p50/p99 (token slots), plan_ms and collate_ms.",
    {"data", "model", "max_len", "batch_size", "max_tokens", "csv", "svg", "seed", "threads",
     "format", "skip_bad_rows", "quiet", "text_field", "text_pair_field", "label_field",
     "truncation", "pair_truncation", "head_fraction"},
    RunBenchPadding};

}  // namespace padless::cli
