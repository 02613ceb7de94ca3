#include "parity_util.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace padless::tokenize::testing {

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> TsvTexts(const std::string& path, size_t limit) {
  std::vector<std::string> texts;
  std::vector<std::string> lines = ReadLines(path);
  for (size_t i = 1; i < lines.size() && texts.size() < limit; ++i) {
    std::string& line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) texts.push_back(line.substr(tab + 1));
  }
  return texts;
}

TextSet LoadTextSet(const std::string& name, const std::string& source_dir,
                    const std::string& edge_jsonl, size_t imdb_texts) {
  const std::vector<std::string> sst2 = TsvTexts(source_dir + "/data/sst2_dev.tsv", SIZE_MAX);
  TextSet set;
  if (name == "sst2") set.first = sst2;
  if (name == "imdb") set.first = TsvTexts(source_dir + "/data/imdb_1k.tsv", imdb_texts);
  if (name == "edge") {
    for (const std::string& line : ReadLines(edge_jsonl)) {
      if (!line.empty()) set.first.push_back(nlohmann::json::parse(line).get<std::string>());
    }
  }
  if (name == "pairs") {
    for (size_t i = 0; i + 1 < sst2.size(); i += 2) {
      set.first.push_back(sst2[i]);
      set.second.push_back(sst2[i + 1]);
    }
  }
  return set;
}

std::vector<std::string> PadlessLines(const Tokenizer& tokenizer, const TextSet& set) {
  EncodeOptions no_limit;
  no_limit.max_length = 0;
  std::vector<std::string> lines;
  for (size_t i = 0; i < set.first.size(); ++i) {
    absl::StatusOr<Encoding> e = set.second.empty()
                                     ? tokenizer.Encode(set.first[i], no_limit)
                                     : tokenizer.EncodePair(set.first[i], set.second[i], no_limit);
    lines.push_back(e.ok() ? absl::StrJoin(e->ids, " ")
                           : absl::StrCat("error: ", e.status().ToString()));
  }
  return lines;
}

void ExpectSameIds(const std::vector<std::string>& want, const std::vector<std::string>& got,
                   const TextSet& set, size_t min_lines, const std::string& what) {
  ASSERT_GE(want.size(), min_lines) << what;
  ASSERT_LE(want.size(), got.size()) << what;
  int reported = 0;
  size_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    ++mismatches;
    if (reported++ < 5) {
      ADD_FAILURE() << what << " line " << i + 1 << ": text '" << set.first[i]
                    << "'\n  hf:      " << want[i] << "\n  padless: " << got[i];
    }
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << want.size() << " differ";
}

}  // namespace padless::tokenize::testing
