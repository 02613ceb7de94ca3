// Fuzzes the TSV, CSV and JSONL corpus readers (corpus::ParseCorpus) on arbitrary bytes with
// options chosen from the input. Invariants: what comes out is valid UTF-8 with 1-based, rising
// line numbers; the report's counts agree with the examples; every non-blank TSV/JSONL line is an
// example, a bad row or the header; skipping bad rows changes nothing on input without them.
#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fuzz_util.h"
#include "padless/corpus/corpus_reader.h"
#include "padless/tokenize/utf8.h"

namespace padless::corpus {
namespace {

using tokenize::IsValidUtf8;

bool SameExamples(const RawCorpus& a, const RawCorpus& b) {
  if (a.examples.size() != b.examples.size()) return false;
  for (size_t i = 0; i < a.examples.size(); ++i) {
    const Example &x = a.examples[i], &y = b.examples[i];
    if (x.label != y.label || x.text != y.text || x.text_pair != y.text_pair ||
        x.has_pair != y.has_pair || x.line != y.line) {
      return false;
    }
  }
  return true;
}

// Lines that carry something, as the TSV and JSONL readers see them.
int64_t NonBlankLines(absl::string_view content, CorpusFormat format) {
  if (absl::StartsWith(content, "\xEF\xBB\xBF")) content.remove_prefix(3);
  int64_t n = 0;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (format == CorpusFormat::kJsonl ? !absl::StripAsciiWhitespace(line).empty()
                                       : !line.empty()) {
      ++n;
    }
  }
  return n;
}

void CheckCorpus(const RawCorpus& c, absl::string_view content, const ReaderOptions& o) {
  const ReadReport& r = c.report;
  FUZZ_CHECK(!c.examples.empty(), "an OK corpus must hold examples");
  FUZZ_CHECK(r.examples == static_cast<int64_t>(c.examples.size()),
             absl::StrCat(r.examples, " reported, ", c.examples.size(), " held"));
  FUZZ_CHECK(o.skip_bad_rows || r.bad_rows == 0, "bad rows counted although not skipping");
  FUZZ_CHECK(static_cast<int64_t>(r.bad_row_messages.size()) ==
                 std::min<int64_t>(r.bad_rows, o.max_reported_bad_rows),
             absl::StrCat(r.bad_row_messages.size(), " messages for ", r.bad_rows, " bad rows"));
  for (const std::string& m : r.bad_row_messages) {
    FUZZ_CHECK(absl::StartsWith(m, absl::StrCat(c.source, ":")), m);
  }
  FUZZ_CHECK(r.invalid_utf8_rows <= r.examples && r.invalid_utf8_sequences >= r.invalid_utf8_rows,
             absl::StrCat(r.invalid_utf8_rows, " rows, ", r.invalid_utf8_sequences, " sequences"));
  if (IsValidUtf8(content)) FUZZ_CHECK(r.invalid_utf8_sequences == 0, "repaired valid UTF-8");
  int64_t last_line = 0;
  for (const Example& e : c.examples) {
    FUZZ_CHECK(e.line > last_line, absl::StrCat("line ", e.line, " after ", last_line));
    last_line = e.line;
    FUZZ_CHECK(IsValidUtf8(e.label) && IsValidUtf8(e.text) && IsValidUtf8(e.text_pair),
               absl::StrCat("invalid UTF-8 passed on at line ", e.line));
    FUZZ_CHECK(!o.require_label || !e.label.empty(), absl::StrCat("empty label at ", e.line));
    FUZZ_CHECK(e.has_pair || e.text_pair.empty(), absl::StrCat("stray pair at ", e.line));
    if (o.format == CorpusFormat::kTsv) {
      for (const std::string* f : {&e.label, &e.text, &e.text_pair}) {
        FUZZ_CHECK(f->find_first_of("\t\n") == std::string::npos,
                   absl::StrCat("separator inside a TSV field at ", e.line));
      }
    }
  }
  FUZZ_CHECK(c.has_pairs() == std::any_of(c.examples.begin(), c.examples.end(),
                                          [](const Example& e) { return e.has_pair; }),
             "has_pairs");
  if (o.format == CorpusFormat::kCsv) {
    const int64_t lines = std::count(content.begin(), content.end(), '\n') + 1;
    FUZZ_CHECK(last_line <= lines, absl::StrCat("line ", last_line, " of ", lines));
    FUZZ_CHECK(r.examples + r.bad_rows + (r.had_header ? 1 : 0) <= lines, "more rows than lines");
  } else {
    FUZZ_CHECK(o.format != CorpusFormat::kJsonl || !r.had_header, "JSONL has no header");
    FUZZ_CHECK(r.examples + r.bad_rows + (r.had_header ? 1 : 0) == NonBlankLines(content, o.format),
               absl::StrCat(r.examples, " examples + ", r.bad_rows, " bad rows for ",
                            NonBlankLines(content, o.format), " lines"));
  }
}

}  // namespace
}  // namespace padless::corpus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::corpus;  // NOLINT: a fuzz entry point
  padless::fuzz::FuzzInput in(data, size);
  ReaderOptions o;
  const CorpusFormat formats[] = {CorpusFormat::kTsv, CorpusFormat::kCsv, CorpusFormat::kJsonl};
  o.format = formats[in.Pick(3)];
  o.header = static_cast<ReaderOptions::Header>(in.Pick(3));
  o.require_label = in.Pick(4) != 0;
  o.max_reported_bad_rows = static_cast<int>(in.Range(0, 3));
  if (in.Pick(4) == 0) {  // short field names, so the fuzzer can hit them in headers and keys
    o.label_field = "l";
    o.text_field = "t";
    o.text_pair_field = "p";
  }
  const absl::string_view content = in.Rest();
  const std::string source = "fuzz.input";

  o.skip_bad_rows = false;
  const absl::StatusOr<RawCorpus> strict = ParseCorpus(content, source, o);
  o.skip_bad_rows = true;
  const absl::StatusOr<RawCorpus> lenient = ParseCorpus(content, source, o);
  if (strict.ok()) {
    CheckCorpus(*strict, content, o);
    FUZZ_CHECK(lenient.ok() && lenient->report.bad_rows == 0 && SameExamples(*strict, *lenient),
               "skip_bad_rows changed the result of input without bad rows");
    o.skip_bad_rows = false;
  } else {
    FUZZ_CHECK(absl::StartsWith(strict.status().message(), source),
               absl::StrCat("error does not name the source: ", strict.status().message()));
  }
  if (lenient.ok()) {
    CheckCorpus(*lenient, content, o);
    FUZZ_CHECK(
        strict.ok() || lenient->report.bad_rows > 0,
        absl::StrCat("strict failed (", strict.status().message(), ") yet nothing was skipped"));
  }
  return 0;
}
