// SplitOff: a seeded subset moved out of a corpus, both sides in file order, nothing lost or
// repeated, the same seed drawing the same examples.
#include "padless/corpus/corpus_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace padless::corpus {
namespace {

RawCorpus Numbered(int n) {
  RawCorpus c;
  c.source = "numbers.tsv";
  for (int i = 0; i < n; ++i) {
    Example e;
    e.text = std::to_string(i);
    e.label = i % 2 == 0 ? "even" : "odd";
    e.line = i + 2;
    c.examples.push_back(e);
  }
  return c;
}

std::vector<int> Texts(const RawCorpus& c) {
  std::vector<int> out;
  for (const Example& e : c.examples) out.push_back(std::stoi(e.text));
  return out;
}

TEST(CorpusSplitTest, MovesASeededSubsetAndKeepsFileOrder) {
  RawCorpus corpus = Numbered(100);
  const RawCorpus split = SplitOff(corpus, 30, 7);
  EXPECT_EQ(split.source, "numbers.tsv");
  const std::vector<int> taken = Texts(split), left = Texts(corpus);
  ASSERT_EQ(taken.size(), 30u);
  ASSERT_EQ(left.size(), 70u);
  EXPECT_TRUE(std::is_sorted(taken.begin(), taken.end()));
  EXPECT_TRUE(std::is_sorted(left.begin(), left.end()));
  std::set<int> all(taken.begin(), taken.end());
  all.insert(left.begin(), left.end());
  EXPECT_EQ(all.size(), 100u);  // each example on exactly one side
  EXPECT_NE(taken, std::vector<int>(left.begin(), left.begin() + 30)) << "not the first rows";

  RawCorpus again = Numbered(100);
  EXPECT_EQ(Texts(SplitOff(again, 30, 7)), taken);  // the same seed, the same draw
  RawCorpus other = Numbered(100);
  EXPECT_NE(Texts(SplitOff(other, 30, 8)), taken);
}

TEST(CorpusSplitTest, CountAtOrAboveTheSizeMovesEverythingAndZeroNothing) {
  RawCorpus corpus = Numbered(5);
  EXPECT_EQ(SplitOff(corpus, 0, 1).examples.size(), 0u);
  EXPECT_EQ(corpus.examples.size(), 5u);
  EXPECT_EQ(Texts(SplitOff(corpus, 9, 1)), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(corpus.examples.empty());
  RawCorpus empty;
  EXPECT_TRUE(SplitOff(empty, 3, 1).examples.empty());
}

}  // namespace
}  // namespace padless::corpus
