#include "padless/corpus/batch_encoder.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trained_model.h"

namespace padless::corpus {
namespace {

using ::testing::HasSubstr;
using tokenize::Encoding;
using tokenize::PairTruncation;
using tokenize::Tokenizer;
using tokenize::testing::BotchanTokenizer;
using tokenize::testing::SharedDataFile;

class BatchEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = BotchanTokenizer();
    if (tok_ == nullptr) GTEST_SKIP() << "no ../shared/data/botchan.txt";
    std::ifstream in(SharedDataFile("botchan.txt"));
    for (std::string line; std::getline(in, line) && lines_.size() < 2000;) lines_.push_back(line);
    ASSERT_GT(lines_.size(), 1000u);
  }

  const Tokenizer* tok_ = nullptr;
  std::vector<std::string> lines_;
};

void ExpectSameCorpus(const TokenizedCorpus& a, const TokenizedCorpus& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.flat_tokens(), b.flat_tokens());
  ASSERT_EQ(a.offsets(), b.offsets());
  ASSERT_EQ(a.labels(), b.labels());
  ASSERT_EQ(a.has_type_ids(), b.has_type_ids());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::equal(a.type_ids(i).begin(), a.type_ids(i).end(), b.type_ids(i).begin(),
                           b.type_ids(i).end()));
  }
}

TEST_F(BatchEncoderTest, EveryThreadCountGivesTheSingleThreadedResult) {
  std::vector<int64_t> labels(lines_.size());
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 3);
  BatchEncodeOptions options;
  options.encode.max_length = 24;
  options.num_threads = 1;
  absl::StatusOr<TokenizedCorpus> single = EncodeTexts(*tok_, lines_, {}, labels, options);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_EQ(single->size(), lines_.size());
  // The batch result is exactly the per-text result.
  for (size_t i = 0; i < lines_.size(); i += 37) {
    absl::StatusOr<Encoding> e = tok_->Encode(lines_[i], options.encode);
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(std::equal(e->ids.begin(), e->ids.end(), single->tokens(i).begin(),
                           single->tokens(i).end()));
    ASSERT_EQ(single->label(i), labels[i]);
  }
  for (int threads : {2, 3, 8, 0}) {
    SCOPED_TRACE(threads);
    options.num_threads = threads;
    absl::StatusOr<TokenizedCorpus> multi = EncodeTexts(*tok_, lines_, {}, labels, options);
    ASSERT_TRUE(multi.ok()) << multi.status();
    ExpectSameCorpus(*single, *multi);
  }
}

TEST_F(BatchEncoderTest, PairsAreDeterministicToo) {
  std::vector<std::string> firsts(lines_.begin(), lines_.begin() + 700);
  std::vector<std::string> seconds(lines_.begin() + 700, lines_.begin() + 1400);
  BatchEncodeOptions options;
  options.encode.max_length = 32;
  options.num_threads = 1;
  absl::StatusOr<TokenizedCorpus> single = EncodeTexts(*tok_, firsts, seconds, {}, options);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_TRUE(single->has_type_ids());
  EXPECT_EQ(single->label(0), -1);
  options.num_threads = 4;
  absl::StatusOr<TokenizedCorpus> multi = EncodeTexts(*tok_, firsts, seconds, {}, options);
  ASSERT_TRUE(multi.ok()) << multi.status();
  ExpectSameCorpus(*single, *multi);
  absl::StatusOr<Encoding> e = tok_->EncodePair(firsts[5], seconds[5], options.encode);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(std::equal(e->type_ids.begin(), e->type_ids.end(), multi->type_ids(5).begin(),
                         multi->type_ids(5).end()));
}

TEST_F(BatchEncoderTest, CorpusLabelsMixedPairsAndProgress) {
  RawCorpus corpus;
  corpus.source = "mem.tsv";
  for (int i = 0; i < 300; ++i) {
    Example e;
    e.label = i % 2 == 0 ? "pos" : "neg";
    e.text = lines_[i];
    e.line = i + 2;
    if (i % 5 == 0) {
      e.text_pair = lines_[i + 1];
      e.has_pair = true;
    }
    corpus.examples.push_back(e);
  }
  const LabelMap labels = LabelMap::FromLabels(std::vector<std::string>{"pos", "neg"});
  BatchEncodeOptions options;
  options.num_threads = 3;
  int64_t last_done = -1, last_total = -1;
  options.progress = [&](int64_t done, int64_t total) {
    EXPECT_GT(done, last_done);
    last_done = done;
    last_total = total;
  };
  absl::StatusOr<TokenizedCorpus> out = EncodeCorpus(*tok_, corpus, labels, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(last_done, 300);  // the final count is reported whichever thread finished last
  EXPECT_EQ(last_total, 300);
  ASSERT_EQ(out->size(), 300u);
  EXPECT_EQ(out->label(0), *labels.Id("pos"));
  EXPECT_EQ(out->label(1), *labels.Id("neg"));
  ASSERT_TRUE(out->has_type_ids());
  // Single examples in a corpus with pairs carry type ids of zeros.
  for (int8_t t : out->type_ids(1)) EXPECT_EQ(t, 0);
  EXPECT_EQ(out->type_ids(0).back(), 1);
}

TEST_F(BatchEncoderTest, ErrorsNameTheLowestFailingLineForAnyThreadCount) {
  RawCorpus corpus;
  corpus.source = "pairs.tsv";
  for (int i = 0; i < 500; ++i) {
    Example e;
    e.label = "x";
    e.text = "short";
    e.text_pair = lines_[i];
    e.has_pair = true;
    e.line = 1000 + i;
    corpus.examples.push_back(e);
  }
  // only_first cannot fit a long second segment: the first such row must be the one reported.
  size_t first_bad = 0;
  BatchEncodeOptions options;
  options.encode.max_length = 10;
  options.encode.pair_truncation = PairTruncation::kOnlyFirst;
  for (size_t i = 0; i < corpus.examples.size(); ++i) {
    if (!tok_->EncodePair("short", lines_[i], options.encode).ok()) {
      first_bad = i;
      break;
    }
  }
  const LabelMap labels = LabelMap::FromLabels(std::vector<std::string>{"x"});
  for (int threads : {1, 2, 7}) {
    options.num_threads = threads;
    absl::StatusOr<TokenizedCorpus> out = EncodeCorpus(*tok_, corpus, labels, options);
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.status().message(),
                HasSubstr(absl::StrCat("pairs.tsv:", 1000 + first_bad, ":")));
    EXPECT_THAT(out.status().message(), HasSubstr("only_first"));
  }
  corpus.examples[3].label = "unknown";
  options.encode.pair_truncation = PairTruncation::kLongestFirst;
  absl::StatusOr<TokenizedCorpus> out = EncodeCorpus(*tok_, corpus, labels, options);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("pairs.tsv:1003: unknown label 'unknown'"));
}

TEST_F(BatchEncoderTest, MismatchedInputsAndEmptyInput) {
  std::vector<std::string> texts = {"a", "b"};
  std::vector<std::string> pairs = {"c"};
  EXPECT_FALSE(EncodeTexts(*tok_, texts, pairs, {}, {}).ok());
  std::vector<int64_t> labels = {1};
  EXPECT_FALSE(EncodeTexts(*tok_, texts, {}, labels, {}).ok());
  absl::StatusOr<TokenizedCorpus> none = EncodeTexts(*tok_, {}, {}, {}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), 0u);
}

}  // namespace
}  // namespace padless::corpus
