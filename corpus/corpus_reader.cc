#include "padless/corpus/corpus_reader.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "padless/base/enum_names.h"
#include "padless/base/file_kind.h"
#include "padless/base/mapped_file.h"
#include "padless/tokenize/utf8.h"

namespace padless::corpus {
namespace {

constexpr absl::string_view kBom = "\xEF\xBB\xBF";

// Where label, text and pair sit in a TSV/CSV row.
struct Columns {
  int label = 0;  // -1: the file has no label column (only when labels are optional)
  int text = 1;
  int pair = 2;       // -1: the file has no pair column
  int expected = -1;  // exact field count (with a header); -1: 2 or 3
};

// Decides whether `first_row` is a header and where the columns are.
absl::StatusOr<Columns> ColumnsFromFirstRow(const std::vector<std::string>& first_row,
                                            const ReaderOptions& options, bool* is_header) {
  auto index_of = [&](const std::string& name) {
    auto it = std::find(first_row.begin(), first_row.end(), name);
    return it == first_row.end() ? -1 : static_cast<int>(it - first_row.begin());
  };
  Columns c;
  const int label = index_of(options.label_field), text = index_of(options.text_field);
  const bool label_optional = !options.require_label;
  *is_header = options.header == ReaderOptions::Header::kPresent ||
               (options.header == ReaderOptions::Header::kAuto && text >= 0 &&
                (label >= 0 || label_optional));
  if (!*is_header) return c;
  if ((label < 0 && !label_optional) || text < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header lacks the column '", label < 0 ? options.label_field : options.text_field, "'"));
  }
  c.label = label;
  c.text = text;
  c.pair = index_of(options.text_pair_field);
  c.expected = static_cast<int>(first_row.size());
  return c;
}

// Collects examples and bad rows with the shared skip / fail policy.
class Collector {
 public:
  Collector(const std::string& source, const ReaderOptions& options) : options_(options) {
    corpus_.source = source;
  }

  // Streaming (StreamCorpus): hands the examples to `sink` every `chunk` examples instead of
  // keeping them, with the content position parsed so far.
  using Sink = std::function<absl::Status(std::vector<Example>&, size_t parsed)>;
  void StreamTo(size_t chunk, Sink sink) {
    chunk_ = std::max<size_t>(1, chunk);
    sink_ = std::move(sink);
  }
  // Where the parser stands in the content: the end of the row handed in last.
  void set_position(size_t position) { position_ = position; }
  int64_t added() const { return added_; }

  // Records a bad row; returns the error to stop with, or OK to continue (skip_bad_rows).
  absl::Status Bad(int64_t line, absl::string_view reason) {
    const std::string message = absl::StrCat(corpus_.source, ":", line, ": ", reason);
    if (!options_.skip_bad_rows) return absl::InvalidArgumentError(message);
    ++corpus_.report.bad_rows;
    if (static_cast<int>(corpus_.report.bad_row_messages.size()) < options_.max_reported_bad_rows) {
      corpus_.report.bad_row_messages.push_back(message);
    }
    return absl::OkStatus();
  }

  // Validates and stores one row whose fields are already unquoted.
  absl::Status Add(int64_t line, std::string label, std::string text,
                   std::optional<std::string> pair) {
    if (options_.require_label && label.empty()) return Bad(line, "missing label");
    Example e;
    e.line = line;
    int64_t replaced = tokenize::SanitizeUtf8(&label) + tokenize::SanitizeUtf8(&text);
    if (pair.has_value()) {
      replaced += tokenize::SanitizeUtf8(&*pair);
      e.text_pair = std::move(*pair);
      e.has_pair = true;
    }
    if (replaced > 0) {
      ++corpus_.report.invalid_utf8_rows;
      corpus_.report.invalid_utf8_sequences += replaced;
    }
    e.label = std::move(label);
    e.text = std::move(text);
    corpus_.examples.push_back(std::move(e));
    ++added_;
    if (sink_ && corpus_.examples.size() >= chunk_) return Flush();
    return absl::OkStatus();
  }

  absl::Status Flush() {
    absl::Status s = sink_(corpus_.examples, position_);
    corpus_.examples.clear();
    return s;
  }

  // Maps split fields onto label/text/pair with `columns`.
  absl::Status AddFields(int64_t line, std::vector<std::string>& fields, const Columns& columns,
                         absl::string_view what) {
    const int n = static_cast<int>(fields.size());
    if (columns.expected >= 0 && n != columns.expected) {
      return Bad(line, absl::StrCat("expected ", columns.expected, " ", what,
                                    " fields as in the header, found ", n));
    }
    if (columns.expected < 0 && n == 1 && !options_.require_label) {
      return Add(line, "", std::move(fields[0]), std::nullopt);  // a text without a label
    }
    if (columns.expected < 0 && (n < 2 || n > 3)) {
      if (n == 1) return Bad(line, absl::StrCat("missing label or text: 1 ", what, " field"));
      return Bad(line, absl::StrCat("expected 2 or 3 ", what,
                                    " fields (label, text[, text_pair]), found ", n));
    }
    std::optional<std::string> pair;
    if (columns.pair >= 0 && columns.pair < n) pair = std::move(fields[columns.pair]);
    std::string label = columns.label >= 0 ? std::move(fields[columns.label]) : std::string();
    return Add(line, std::move(label), std::move(fields[columns.text]), std::move(pair));
  }

  // TSV and CSV rows: the first row fixes the columns and is skipped when it is a header.
  absl::Status AddRow(int64_t line, std::vector<std::string>& fields, absl::string_view what) {
    if (!columns_.has_value()) {
      bool is_header = false;
      absl::StatusOr<Columns> c = ColumnsFromFirstRow(fields, options_, &is_header);
      if (!c.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(corpus_.source, ":", line, ": ", c.status().message()));
      }
      columns_ = *c;
      corpus_.report.had_header = is_header;
      if (is_header) return absl::OkStatus();
    }
    return AddFields(line, fields, *columns_, what);
  }

  absl::StatusOr<RawCorpus> Finish() {
    corpus_.report.examples = added_;
    if (sink_ && !corpus_.examples.empty()) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
    if (added_ == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          corpus_.source, ": no examples",
          corpus_.report.bad_rows > 0 ? absl::StrCat(" (", corpus_.report.bad_rows, " bad rows)")
                                      : std::string(" (empty file)")));
    }
    return std::move(corpus_);
  }

  RawCorpus& corpus() { return corpus_; }

 private:
  const ReaderOptions& options_;
  RawCorpus corpus_;
  std::optional<Columns> columns_;
  int64_t added_ = 0;
  size_t chunk_ = 0;
  Sink sink_;
  size_t position_ = 0;
};

// Splits content into lines without their terminators ("\n" or "\r\n"); the last line may lack
// one. Calls fn(line_number, line) until it returns a non-OK status, telling `out` where the line
// ends first.
template <typename Fn>
absl::Status ForEachLine(absl::string_view content, Collector& out, Fn fn) {
  int64_t line_number = 0;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == absl::string_view::npos) end = content.size();
    absl::string_view line = content.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    out.set_position(std::min(pos, content.size()));
    if (absl::Status s = fn(++line_number, line); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<RawCorpus> ParseTsv(absl::string_view content, Collector& out) {
  absl::Status status = ForEachLine(content, out, [&](int64_t line, absl::string_view text) {
    if (text.empty()) return absl::OkStatus();  // blank lines (e.g. a trailing one) carry nothing
    std::vector<std::string> fields = absl::StrSplit(text, '\t');
    return out.AddRow(line, fields, "tab-separated");
  });
  if (!status.ok()) return status;
  return out.Finish();
}

// One RFC 4180 record starting at `pos`. On success advances `pos` past the record terminator and
// `line` by the newlines consumed. Returns an error reason (and leaves pos alone) on a malformed
// record.
std::optional<std::string> ParseCsvRecord(absl::string_view content, size_t* pos, int64_t* line,
                                          std::vector<std::string>* fields) {
  fields->clear();
  size_t i = *pos;
  int64_t newlines = 0;
  const size_t n = content.size();
  while (true) {
    std::string field;
    if (i < n && content[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        const char c = content[i];
        if (c == '"') {
          if (i + 1 < n && content[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        if (c == '\n') ++newlines;
        field.push_back(c);
        ++i;
      }
      if (!closed) return std::string("unterminated quoted field");
      if (i < n && content[i] == '\r' && i + 1 < n && content[i + 1] == '\n') ++i;
      if (i < n && content[i] != ',' && content[i] != '\n') {
        return absl::StrCat("unexpected character '", std::string(1, content[i]),
                            "' after a closing quote");
      }
    } else {
      const size_t end = content.find_first_of(",\n", i);
      const size_t stop = end == absl::string_view::npos ? n : end;
      absl::string_view raw = content.substr(i, stop - i);
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      field.assign(raw.data(), raw.size());
      i = stop;
    }
    fields->push_back(std::move(field));
    if (i >= n) break;
    if (content[i] == ',') {
      ++i;
      continue;
    }
    ++i;  // '\n'
    ++newlines;
    break;
  }
  *pos = i;
  *line += newlines;
  return std::nullopt;
}

absl::StatusOr<RawCorpus> ParseCsv(absl::string_view content, Collector& out) {
  std::vector<std::string> fields;
  size_t pos = 0;
  int64_t line = 1;
  while (pos < content.size()) {
    const int64_t start_line = line;
    if (content[pos] == '\n' || content.substr(pos, 2) == "\r\n") {  // blank line
      pos = content.find('\n', pos) + 1;
      ++line;
      continue;
    }
    if (std::optional<std::string> error = ParseCsvRecord(content, &pos, &line, &fields)) {
      if (absl::Status s = out.Bad(start_line, *error); !s.ok()) return s;
      // Resynchronise at the next line, so one stray quote does not swallow the rest of the file.
      const size_t next = content.find('\n', pos);
      pos = next == absl::string_view::npos ? content.size() : next + 1;
      line = start_line + 1;
      continue;
    }
    out.set_position(pos);
    if (absl::Status s = out.AddRow(start_line, fields, "comma-separated"); !s.ok()) {
      return s;
    }
  }
  return out.Finish();
}

absl::StatusOr<RawCorpus> ParseJsonl(absl::string_view content, Collector& out,
                                     const ReaderOptions& options) {
  std::string buffer;
  absl::Status status = ForEachLine(content, out, [&](int64_t line, absl::string_view text) {
    if (absl::StripAsciiWhitespace(text).empty()) return absl::OkStatus();
    buffer.assign(text.data(), text.size());
    // Repair first: the JSON parser rejects invalid UTF-8 inside strings outright. Counted once
    // here; the fields below are then valid.
    const int64_t replaced = tokenize::SanitizeUtf8(&buffer);
    const nlohmann::json j = nlohmann::json::parse(buffer, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return out.Bad(line, "not valid JSON");
    if (!j.is_object()) return out.Bad(line, "not a JSON object");
    std::string label;
    if (auto it = j.find(options.label_field); it != j.end() && !it->is_null()) {
      if (it->is_string()) {
        label = it->get<std::string>();
      } else if (it->is_number_integer() || it->is_boolean()) {
        label = it->dump();
      } else {
        return out.Bad(
            line, absl::StrCat("field '", options.label_field, "' is not a string or an integer"));
      }
    } else if (options.require_label) {
      return out.Bad(line, absl::StrCat("missing label field '", options.label_field, "'"));
    }
    auto text_it = j.find(options.text_field);
    if (text_it == j.end()) {
      return out.Bad(line, absl::StrCat("missing text field '", options.text_field, "'"));
    }
    if (!text_it->is_string()) {
      return out.Bad(line, absl::StrCat("field '", options.text_field, "' is not a string"));
    }
    std::optional<std::string> pair;
    if (auto it = j.find(options.text_pair_field); it != j.end() && !it->is_null()) {
      if (!it->is_string()) {
        return out.Bad(line, absl::StrCat("field '", options.text_pair_field, "' is not a string"));
      }
      pair = it->get<std::string>();
    }
    const int64_t before = out.added();
    if (absl::Status s =
            out.Add(line, std::move(label), text_it->get<std::string>(), std::move(pair));
        !s.ok()) {
      return s;
    }
    if (replaced > 0 && out.added() > before) {
      ++out.corpus().report.invalid_utf8_rows;
      out.corpus().report.invalid_utf8_sequences += replaced;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out.Finish();
}

}  // namespace

absl::StatusOr<CorpusFormat> ParseCorpusFormat(absl::string_view name) {
  static constexpr base::EnumName<CorpusFormat> kFormats[] = {{"auto", CorpusFormat::kAuto},
                                                              {"tsv", CorpusFormat::kTsv},
                                                              {"csv", CorpusFormat::kCsv},
                                                              {"jsonl", CorpusFormat::kJsonl}};
  return base::ParseEnum("data format", name, kFormats);
}

absl::StatusOr<CorpusFormat> FormatFromPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".tsv")) return CorpusFormat::kTsv;
  if (absl::EndsWith(lower, ".csv")) return CorpusFormat::kCsv;
  if (absl::EndsWith(lower, ".jsonl") || absl::EndsWith(lower, ".json") ||
      absl::EndsWith(lower, ".ndjson")) {
    return CorpusFormat::kJsonl;
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot tell the format of ", path,
                                                 " from its extension; give tsv, csv or jsonl"));
}

std::string ReadReport::Summary() const {
  std::string s = absl::StrCat(examples, " examples");
  if (bad_rows > 0) absl::StrAppend(&s, ", ", bad_rows, " bad rows skipped");
  if (invalid_utf8_rows > 0) {
    absl::StrAppend(&s, ", ", invalid_utf8_rows, " rows with invalid UTF-8 (",
                    invalid_utf8_sequences, " sequences replaced by U+FFFD)");
  }
  return s;
}

bool RawCorpus::has_pairs() const {
  return std::any_of(examples.begin(), examples.end(), [](const Example& e) { return e.has_pair; });
}

namespace {

absl::StatusOr<RawCorpus> ParseInto(absl::string_view content, const std::string& source,
                                    const ReaderOptions& options, Collector& out) {
  CorpusFormat format = options.format;
  if (format == CorpusFormat::kAuto) {
    absl::StatusOr<CorpusFormat> f = FormatFromPath(source);
    if (!f.ok()) return f.status();
    format = *f;
  }
  switch (format) {
    case CorpusFormat::kCsv:
      return ParseCsv(content, out);
    case CorpusFormat::kJsonl:
      return ParseJsonl(content, out, options);
    case CorpusFormat::kTsv:
    case CorpusFormat::kAuto:
      break;
  }
  return ParseTsv(content, out);
}

}  // namespace

absl::StatusOr<RawCorpus> ParseCorpus(absl::string_view content, const std::string& source,
                                      const ReaderOptions& options) {
  if (absl::StartsWith(content, kBom)) content.remove_prefix(kBom.size());
  Collector out(source, options);
  return ParseInto(content, source, options, out);
}

absl::StatusOr<ReadReport> StreamCorpus(const std::string& path, const ReaderOptions& options,
                                        size_t chunk_examples, const ExampleSink& sink) {
  absl::StatusOr<std::shared_ptr<const base::MappedFile>> file =
      base::MappedFile::Open(path, "data file", base::MappedFile::Access::kSequential);
  if (!file.ok()) return file.status();
  absl::string_view content = (*file)->bytes();
  const size_t skipped = absl::StartsWith(content, kBom) ? kBom.size() : 0;
  content.remove_prefix(skipped);
  Collector out(path, options);
  out.StreamTo(chunk_examples, [&](std::vector<Example>& chunk, size_t parsed) {
    // The rows handed on are copied out: their pages need not stay resident.
    (*file)->ReleasePrefix(skipped + parsed);
    return sink(chunk);
  });
  absl::StatusOr<RawCorpus> rest = ParseInto(content, path, options, out);
  if (!rest.ok()) return rest.status();
  return rest->report;
}

absl::StatusOr<RawCorpus> ReadCorpus(const std::string& path, const ReaderOptions& options) {
  if (absl::Status s = base::CheckRegularFile(path, "data file"); !s.ok()) return s;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot open data file ", path));
  std::string content;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0);
  if (size > 0) {
    content.resize(static_cast<size_t>(size));
    if (!in.read(content.data(), size)) {
      return absl::DataLossError(absl::StrCat("cannot read data file ", path));
    }
  }
  return ParseCorpus(content, path, options);
}

}  // namespace padless::corpus
