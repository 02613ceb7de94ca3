#include "tokenize_data.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "flag_spelling.h"
#include "padless/corpus/batch_encoder.h"
#include "path_checks.h"
#include "tokenizer_flag.h"

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// Progress on stderr: a line redrawn in place on a terminal, only the final count in a log file.
void Progress(const std::string& what, int64_t done, int64_t total) {
  if (Quiet() || total <= 0) return;
  static const bool terminal = isatty(fileno(stderr)) != 0;
  if (!terminal && done != total) return;
  absl::FPrintF(stderr, "%s%s %d/%d (%d%%)%s", terminal ? "\r" : "", what, done, total,
                done * 100 / total, done == total ? "\n" : "");
}

}  // namespace

bool Quiet() { return absl::GetFlag(FLAGS_quiet); }

absl::StatusOr<corpus::ReaderOptions> ReaderFromFlags() {
  return ReaderOptionsFromFlags(/*require_label=*/true);
}

absl::StatusOr<tok::EncodeOptions> EncodeFromFlags() { return EncodeOptionsFromFlags(); }

absl::StatusOr<int> ThreadsFromFlags() {
  if (absl::Status s = CheckSizeFlags(kThreads); !s.ok()) return s;
  return absl::GetFlag(FLAGS_threads);
}

absl::Status RequireFlag(const std::string& value, absl::string_view name) {
  if (value.empty()) return UsageError(absl::StrCat(FlagAsWritten(name), " is required"));
  return absl::OkStatus();
}

absl::StatusOr<corpus::RawCorpus> ReadData(const std::string& path) {
  absl::StatusOr<corpus::ReaderOptions> options = ReaderFromFlags();
  if (!options.ok()) return options.status();
  absl::StatusOr<corpus::RawCorpus> corpus = corpus::ReadCorpus(path, *options);
  if (!corpus.ok()) return corpus.status();
  if (!Quiet()) {
    absl::FPrintF(stderr, "read %s: %s\n", path, corpus->report.Summary());
    for (const std::string& message : corpus->report.bad_row_messages) {
      absl::FPrintF(stderr, "  skipped %s\n", message);
    }
  }
  return corpus;
}

absl::StatusOr<tok::Tokenizer> LoadTokenizer() {
  const std::string model = absl::GetFlag(FLAGS_model), data = absl::GetFlag(FLAGS_data);
  if (absl::Status s = RequireFlag(model, "model"); !s.ok()) return s;
  if (absl::Status s = RequireFlag(data, "data"); !s.ok()) return s;
  if (absl::StatusOr<corpus::ReaderOptions> o = ReaderFromFlags(); !o.ok()) return o.status();
  if (absl::StatusOr<tok::EncodeOptions> o = EncodeFromFlags(); !o.ok()) return o.status();
  if (absl::StatusOr<int> t = ThreadsFromFlags(); !t.ok()) return t.status();
  if (absl::Status s = CheckPathFlags({TokenizerPathFlag("model", model),
                                       {"data", data, PathUse::kInputTextFile},
                                       {"out", absl::GetFlag(FLAGS_out), PathUse::kOutputFile},
                                       {"csv", absl::GetFlag(FLAGS_csv), PathUse::kOutputFile},
                                       {"svg", absl::GetFlag(FLAGS_svg), PathUse::kOutputFile}});
      !s.ok()) {
    return s;
  }
  return tok::Tokenizer::Load(model);
}

absl::StatusOr<corpus::TokenizedCorpus> EncodeLoaded(const TokenizerAndCorpus& loaded,
                                                     const corpus::LabelMap& labels,
                                                     const tok::EncodeOptions& encode) {
  corpus::BatchEncodeOptions options;
  options.encode = encode;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  int64_t last_percent = -1;
  options.progress = [&](int64_t done, int64_t total) {
    const int64_t percent = done * 20 / std::max<int64_t>(total, 1);
    if (percent != last_percent) {
      last_percent = percent;
      Progress("encoding", done, total);
    }
  };
  return corpus::EncodeCorpus(loaded.tokenizer, loaded.corpus, labels, options);
}

void PrintReaderSummary(const corpus::ReadReport& report) {
  absl::PrintF("examples: %d\nbad_rows_skipped: %d\ninvalid_utf8_rows: %d\n", report.examples,
               report.bad_rows, report.invalid_utf8_rows);
}

}  // namespace padless::cli
