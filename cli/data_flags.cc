#include "data_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "common_flags.h"
#include "flag_spelling.h"
#include "padless/tokenize/truncation.h"

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// `status` of parsing the flag `name`, with the flag named first.
absl::Status FlagError(absl::string_view name, const absl::Status& status) {
  return UsageError(absl::StrCat(FlagAsWritten(name), ": ", status.message()));
}

// "--batch-size must be >= 1, got 0": the one form of every range error.
absl::Status AtLeast(absl::string_view name, int64_t value, int64_t minimum,
                     absl::string_view why = "") {
  if (value >= minimum) return absl::OkStatus();
  return UsageError(absl::StrCat(FlagAsWritten(name), " must be >= ", minimum, ", got ", value,
                                 why.empty() ? "" : " ", why));
}

}  // namespace

absl::StatusOr<corpus::ReaderOptions> ReaderOptionsFromFlags(bool require_label) {
  corpus::ReaderOptions o;
  absl::StatusOr<corpus::CorpusFormat> format =
      corpus::ParseCorpusFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return FlagError("format", format.status());
  o.format = *format;
  o.text_field = absl::GetFlag(FLAGS_text_field);
  o.text_pair_field = absl::GetFlag(FLAGS_text_pair_field);
  o.label_field = absl::GetFlag(FLAGS_label_field);
  o.skip_bad_rows = absl::GetFlag(FLAGS_skip_bad_rows);
  o.require_label = require_label;
  return o;
}

absl::Status CheckSizeFlags(unsigned flags) {
  const int64_t max_len = absl::GetFlag(FLAGS_max_len);
  if (flags & kMaxLen) {
    if (absl::Status s =
            AtLeast("max_len", max_len, kMinMaxLen, "(room for [CLS], a token, [SEP])");
        !s.ok()) {
      return s;
    }
  }
  if (flags & kBatchSize) {
    if (absl::Status s = AtLeast("batch_size", absl::GetFlag(FLAGS_batch_size), 1); !s.ok())
      return s;
  }
  if ((flags & kMaxTokens) && absl::GetFlag(FLAGS_max_tokens).has_value()) {
    const int64_t max_tokens = *absl::GetFlag(FLAGS_max_tokens);
    if (max_tokens < max_len) {
      return UsageError(absl::StrCat(FlagAsWritten("max_tokens"),
                                     " must be >= ", FlagAsWritten("max_len"), " (", max_len,
                                     "), got ", max_tokens, " (a batch must hold one full row)"));
    }
  }
  if (flags & kThreads) {
    if (absl::Status s = AtLeast("threads", absl::GetFlag(FLAGS_threads), 0, "(0: all cores)");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<tok::EncodeOptions> EncodeOptionsFromFlags() {
  tok::EncodeOptions o;
  o.max_length = absl::GetFlag(FLAGS_max_len);
  if (absl::Status s = CheckSizeFlags(kMaxLen); !s.ok()) return s;
  absl::StatusOr<tok::Truncation> t = tok::ParseTruncation(absl::GetFlag(FLAGS_truncation));
  if (!t.ok()) return FlagError("truncation", t.status());
  o.truncation = *t;
  absl::StatusOr<tok::PairTruncation> p =
      tok::ParsePairTruncation(absl::GetFlag(FLAGS_pair_truncation));
  if (!p.ok()) return FlagError("pair_truncation", p.status());
  o.pair_truncation = *p;
  o.head_fraction = absl::GetFlag(FLAGS_head_fraction);
  if (!(o.head_fraction >= 0.0 && o.head_fraction <= 1.0)) {
    return UsageError(
        absl::StrCat(FlagAsWritten("head_fraction"), " must be in [0, 1], got ", o.head_fraction));
  }
  return o;
}

}  // namespace padless::cli
