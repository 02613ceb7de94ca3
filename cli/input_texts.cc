#include "input_texts.h"

#include <fstream>
#include <iostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace padless::cli {

absl::StatusOr<std::vector<std::string>> ReadInputTexts(const std::string& data,
                                                        const corpus::ReaderOptions& reader) {
  std::vector<std::string> texts;
  // Plain text, one text per line: stdin, or a file that --format auto cannot place as TSV, CSV
  // or JSONL by its extension (.txt, no extension, ...). Those formats are read with labels
  // optional (ReaderOptions::require_label false), so a file without a label column works.
  const bool plain_lines = data.empty() || (reader.format == corpus::CorpusFormat::kAuto &&
                                            !corpus::FormatFromPath(data).ok());
  if (!plain_lines) {
    absl::StatusOr<corpus::RawCorpus> raw = corpus::ReadCorpus(data, reader);
    if (!raw.ok()) return raw.status();
    for (corpus::Example& e : raw->examples) texts.push_back(std::move(e.text));
    return texts;
  }
  std::ifstream file;
  if (!data.empty()) {
    file.open(data);
    if (!file) return absl::NotFoundError(absl::StrCat(data, ": cannot open"));
  }
  std::istream& in = data.empty() ? std::cin : file;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    texts.push_back(std::move(line));
  }
  if (in.bad())
    return absl::DataLossError(absl::StrCat(data.empty() ? "stdin" : data, ": read failed"));
  return texts;
}

}  // namespace padless::cli
