// Corpus readers for labeled text: TSV (label<TAB>text[<TAB>text_pair]), CSV (RFC 4180 quoting)
// and JSONL (configurable field names). Bad rows fail with file:line and the reason, or are
// skipped and counted when asked; invalid UTF-8 is replaced with U+FFFD and counted, never
// passed on silently.
#ifndef PADLESS_CORPUS_CORPUS_READER_H_
#define PADLESS_CORPUS_CORPUS_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::corpus {

enum class CorpusFormat { kAuto, kTsv, kCsv, kJsonl };

// "auto", "tsv", "csv" or "jsonl".
absl::StatusOr<CorpusFormat> ParseCorpusFormat(absl::string_view name);
// From the extension: .tsv -> TSV, .csv -> CSV, .jsonl/.json/.ndjson -> JSONL.
absl::StatusOr<CorpusFormat> FormatFromPath(absl::string_view path);

struct ReaderOptions {
  CorpusFormat format = CorpusFormat::kAuto;
  // JSONL keys, and TSV/CSV column names when the file has a header.
  std::string label_field = "label";
  std::string text_field = "text";
  std::string text_pair_field = "text_pair";
  // TSV/CSV: kAuto takes the first row as a header when it names both label_field and text_field.
  enum class Header { kAuto, kPresent, kAbsent };
  Header header = Header::kAuto;
  // When false (data to predict on), labels are optional: an empty or absent label is accepted,
  // and so is a file without a label column: a TSV/CSV header may name only text_field, a
  // headerless TSV/CSV row of one field is the text, and JSONL objects may lack label_field.
  // A headerless row of two or three fields is still label, text[, text_pair]: an unlabeled
  // TSV/CSV whose texts hold the separator needs a header (or use JSONL or plain text).
  bool require_label = true;
  // Skip malformed rows (counted in ReadReport) instead of failing on the first one.
  bool skip_bad_rows = false;
  // How many bad-row messages ReadReport keeps.
  int max_reported_bad_rows = 10;
};

struct Example {
  std::string label;
  std::string text;
  std::string text_pair;
  bool has_pair = false;
  int64_t line = 0;  // 1-based line where the row starts, for error messages
};

struct ReadReport {
  int64_t examples = 0;
  int64_t bad_rows = 0;
  int64_t invalid_utf8_rows = 0;       // rows with at least one replaced sequence
  int64_t invalid_utf8_sequences = 0;  // U+FFFD substitutions in total
  bool had_header = false;
  std::vector<std::string> bad_row_messages;  // the first few, "file:line: reason"
  // One line for humans, e.g. "25000 examples, 2 bad rows skipped, 1 row with invalid UTF-8".
  std::string Summary() const;
};

struct RawCorpus {
  std::string source;  // the file name, used in messages
  std::vector<Example> examples;
  ReadReport report;
  bool has_pairs() const;
};

// Reads a whole file. InvalidArgument naming file:line for the first bad row (unless
// skip_bad_rows), and when the file holds no examples at all.
absl::StatusOr<RawCorpus> ReadCorpus(const std::string& path, const ReaderOptions& options);
// Reads `path` as ReadCorpus does, but hands its examples to `sink` in file order, in chunks of at
// most `chunk_examples`, instead of keeping them: the file is mapped and the pages of rows already
// handed on are released, so a file larger than memory can be read. The chunk is the sink's to
// move from. Returns the report of the whole file; an error of the sink stops the reading.
using ExampleSink = std::function<absl::Status(std::vector<Example>& chunk)>;
absl::StatusOr<ReadReport> StreamCorpus(const std::string& path, const ReaderOptions& options,
                                        size_t chunk_examples, const ExampleSink& sink);
// The same on content in memory; `source` names it in messages and, for kAuto, its format.
absl::StatusOr<RawCorpus> ParseCorpus(absl::string_view content, const std::string& source,
                                      const ReaderOptions& options);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_CORPUS_READER_H_
