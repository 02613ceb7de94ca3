#include "padless/corpus/label_map.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::corpus {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LabelMapTest, SortsNumericLabelsNumericallyAndOthersLexicographically) {
  const std::vector<std::string> numeric = {"10", "2", "2", "-1", "0"};
  EXPECT_THAT(LabelMap::FromLabels(numeric).names(), ElementsAre("-1", "0", "2", "10"));
  const std::vector<std::string> words = {"pos", "neg", "neutral", "neg"};
  const LabelMap map = LabelMap::FromLabels(words);
  EXPECT_THAT(map.names(), ElementsAre("neg", "neutral", "pos"));
  EXPECT_EQ(*map.Id("pos"), 2);
  EXPECT_EQ(map.Name(1), "neutral");
  EXPECT_EQ(map.Id("happy").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(map.Id("happy").status().message(), HasSubstr("'happy'"));
}

TEST(LabelMapTest, FromCorpusTakesTheDistinctLabelsOfEveryExample) {
  absl::StatusOr<RawCorpus> corpus =
      ParseCorpus("label\ttext\n10\ta\n2\tb\n10\tc\n", "labels.tsv", ReaderOptions());
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_THAT(LabelMap::FromCorpus(*corpus).names(), ElementsAre("2", "10"));
  EXPECT_EQ(LabelMap::FromCorpus(RawCorpus()).size(), 0);
}

TEST(LabelMapTest, SaveLoadRoundTrip) {
  const std::string path = ::testing::TempDir() + "/labels_test.labels.json";
  absl::StatusOr<LabelMap> map = LabelMap::FromNames({"b", "a", "c"});
  ASSERT_TRUE(map.ok());
  ASSERT_TRUE(map->Save(path).ok());
  absl::StatusOr<LabelMap> loaded = LabelMap::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->names(), ElementsAre("b", "a", "c"));
  EXPECT_EQ(*loaded->Id("c"), 2);
  std::remove(path.c_str());
}

TEST(LabelMapTest, BadFilesFailClearly) {
  const std::string path = ::testing::TempDir() + "/labels_bad.json";
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not valid JSON"},
      {"{\"format\": \"other\", \"version\": 1, \"labels\": []}", "not a padless label map"},
      // A non-string format threw nlohmann::json::type_error out of Load (seen while writing
      // tests/fuzz/model_dir_fuzzer; the input is in its corpus).
      {"{\"format\": 1, \"version\": 1, \"labels\": []}", "not a padless label map"},
      {"{\"format\": null, \"version\": 1, \"labels\": []}", "not a padless label map"},
      {"{\"format\": \"padless-labels\", \"version\": 1, \"labels\": 3}", "not an array"},
      {"{\"format\": \"padless-labels\", \"version\": 1, \"labels\": [\"a\", \"a\"]}",
       "duplicate label 'a'"},
  };
  for (const auto& [content, reason] : cases) {
    {
      std::ofstream out(path);
      out << content;
    }
    absl::StatusOr<LabelMap> map = LabelMap::Load(path);
    ASSERT_FALSE(map.ok()) << content;
    EXPECT_THAT(map.status().message(), HasSubstr(reason));
    EXPECT_THAT(map.status().message(), HasSubstr(path));
  }
  std::remove(path.c_str());
  EXPECT_EQ(LabelMap::Load(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(LabelMapTest, PathForModel) {
  EXPECT_EQ(LabelMap::PathForModel("out/imdb.model"), "out/imdb.labels.json");
  EXPECT_EQ(LabelMap::PathForModel("weird"), "weird.labels.json");
}

}  // namespace
}  // namespace padless::corpus
