#include "data_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common_flags.h"
#include "padless/tokenize/truncation.h"

namespace padless::cli {
namespace {

namespace tok = ::padless::tokenize;

// `status` of parsing `--flag`, with the flag named first.
absl::Status FlagError(const char* flag, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", status.message()));
}

absl::Status CheckMaxLen(int64_t max_len, int64_t min_max_len) {
  if (max_len >= min_max_len) return absl::OkStatus();
  if (min_max_len == 0) return absl::InvalidArgumentError("--max-len must be >= 0 (0: no limit)");
  return absl::InvalidArgumentError(
      absl::StrCat("--max-len must be >= ", min_max_len, ", got ", max_len));
}

}  // namespace

absl::StatusOr<tok::ReaderOptions> ReaderOptionsFromFlags(bool require_label) {
  tok::ReaderOptions o;
  absl::StatusOr<tok::CorpusFormat> format = tok::ParseCorpusFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return FlagError("--format", format.status());
  o.format = *format;
  o.text_field = absl::GetFlag(FLAGS_text_field);
  o.text_pair_field = absl::GetFlag(FLAGS_text_pair_field);
  o.label_field = absl::GetFlag(FLAGS_label_field);
  o.skip_bad_rows = absl::GetFlag(FLAGS_skip_bad_rows);
  o.require_label = require_label;
  return o;
}

absl::StatusOr<tok::EncodeOptions> EncodeOptionsFromFlags(int64_t min_max_len) {
  tok::EncodeOptions o;
  o.max_length = absl::GetFlag(FLAGS_max_len);
  if (absl::Status s = CheckMaxLen(o.max_length, min_max_len); !s.ok()) return s;
  absl::StatusOr<tok::Truncation> t = tok::ParseTruncation(absl::GetFlag(FLAGS_truncation));
  if (!t.ok()) return FlagError("--truncation", t.status());
  o.truncation = *t;
  absl::StatusOr<tok::PairTruncation> p =
      tok::ParsePairTruncation(absl::GetFlag(FLAGS_pair_truncation));
  if (!p.ok()) return FlagError("--pair-truncation", p.status());
  o.pair_truncation = *p;
  o.head_fraction = absl::GetFlag(FLAGS_head_fraction);
  if (!(o.head_fraction >= 0.0 && o.head_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--head-fraction must be in [0, 1], got ", o.head_fraction));
  }
  return o;
}

}  // namespace padless::cli
