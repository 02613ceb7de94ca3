#include "padless/tokenize/tokenizer.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/corpus/corpus_cache.h"
#include "padless/corpus/corpus_reader.h"
#include "spm_reference.h"
#include "trained_model.h"

namespace padless::tokenize {
namespace {

using corpus::CacheFingerprint;
using corpus::DescribeOptions;
using corpus::RawCorpus;
using corpus::ReadCorpus;
using testing::BotchanTokenizer;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::SharedDataFile;

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = BotchanTokenizer();
    if (tok_ == nullptr) GTEST_SKIP() << "no ../shared/data/botchan.txt";
  }
  // Pieces of `text` (no special tokens).
  std::vector<int32_t> Pieces(const std::string& text) const {
    absl::StatusOr<std::vector<int32_t>> ids = tok_->EncodePieces(text);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }
  const Tokenizer* tok_ = nullptr;
};

constexpr char kLongText[] =
    "It was a fine day in the country, and I went to the school to teach mathematics to the "
    "boys, who laughed at me because I was from Tokyo and did not know their ways at all.";

TEST_F(TokenizerTest, SpecialTokensHaveTheirFixedIds) {
  EXPECT_EQ(tok_->vocab_size(), testing::kBotchanVocab);
  EXPECT_EQ(tok_->PieceToId("[PAD]"), kPadId);
  EXPECT_EQ(tok_->PieceToId("[UNK]"), kUnkId);
  EXPECT_EQ(tok_->PieceToId("[CLS]"), kClsId);
  EXPECT_EQ(tok_->PieceToId("[SEP]"), kSepId);
  EXPECT_EQ(tok_->PieceToId("[MASK]"), kMaskId);
  EXPECT_EQ(tok_->IdToPiece(kMaskId), "[MASK]");
  EXPECT_EQ(tok_->IdToPiece(-1), "");
  EXPECT_EQ(tok_->IdToPiece(tok_->vocab_size()), "");
  EXPECT_EQ(tok_->PieceToId("no-such-piece-anywhere"), kUnkId);
  // Text never produces the reserved ids, not even from their literal spellings.
  for (int32_t id : Pieces("[CLS] [SEP] [MASK] [PAD] text")) EXPECT_GE(id, kNumSpecialTokens);
}

TEST_F(TokenizerTest, IdsEqualSentencePieceOnImdbText) {
  const std::string imdb = SharedDataFile("imdb_train.tsv");
  if (imdb.empty()) GTEST_SKIP() << "no imdb_train.tsv";
  absl::StatusOr<RawCorpus> corpus = ReadCorpus(imdb, {});
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  std::vector<std::string> texts;
  for (size_t i = 0; i < corpus->examples.size() && texts.size() < 300; i += 83) {
    texts.push_back(corpus->examples[i].text);
  }
  std::vector<std::vector<int>> reference;
  std::string error;
  ASSERT_TRUE(testing::ReferenceEncode(tok_->Serialized(), texts, &reference, &error)) << error;
  EncodeOptions unlimited;
  unlimited.max_length = 0;
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_THAT(Pieces(texts[i]), ElementsAreArray(reference[i])) << "review " << i;
    absl::StatusOr<Encoding> e = tok_->Encode(texts[i], unlimited);
    ASSERT_TRUE(e.ok());
    std::vector<int32_t> want = {kClsId};
    want.insert(want.end(), reference[i].begin(), reference[i].end());
    want.push_back(kSepId);
    ASSERT_EQ(e->ids, want);
    tokens += reference[i].size();
  }
  EXPECT_GT(tokens, 300u * 50);  // real reviews, not empty strings
}

TEST_F(TokenizerTest, SingleAndPairTemplates) {
  const std::vector<int32_t> a = Pieces("the school"), b = Pieces("a teacher");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  absl::StatusOr<Encoding> single = tok_->Encode("the school", {});
  ASSERT_TRUE(single.ok());
  std::vector<int32_t> want = {kClsId};
  want.insert(want.end(), a.begin(), a.end());
  want.push_back(kSepId);
  EXPECT_EQ(single->ids, want);
  EXPECT_TRUE(single->type_ids.empty());

  absl::StatusOr<Encoding> pair = tok_->EncodePair("the school", "a teacher", {});
  ASSERT_TRUE(pair.ok());
  want.insert(want.end(), b.begin(), b.end());
  want.push_back(kSepId);
  EXPECT_EQ(pair->ids, want);
  std::vector<int8_t> types(a.size() + 2, 0);
  types.insert(types.end(), b.size() + 1, 1);
  EXPECT_EQ(pair->type_ids, types);
}

struct SingleCase {
  const char* name;
  const char* text;
  int64_t max_length;
  Truncation strategy;
  bool ok;
};

TEST_F(TokenizerTest, SingleTruncationTable) {
  const SingleCase cases[] = {
      {"head", kLongText, 12, Truncation::kHead, true},
      {"tail", kLongText, 12, Truncation::kTail, true},
      {"head_tail", kLongText, 12, Truncation::kHeadTail, true},
      {"no limit", kLongText, 0, Truncation::kHeadTail, true},
      {"only specials fit", kLongText, 2, Truncation::kHead, true},
      {"one token", kLongText, 3, Truncation::kHeadTail, true},
      {"empty text", "", 8, Truncation::kHeadTail, true},
      {"empty text, exact", "", 2, Truncation::kHead, true},
      {"short text fits", "school", 64, Truncation::kTail, true},
      {"max_length below specials", kLongText, 1, Truncation::kHead, false},
      {"max_length negative", kLongText, -5, Truncation::kHead, false},
  };
  for (const SingleCase& c : cases) {
    SCOPED_TRACE(c.name);
    EncodeOptions options;
    options.max_length = c.max_length;
    options.truncation = c.strategy;
    absl::StatusOr<Encoding> e = tok_->Encode(c.text, options);
    ASSERT_EQ(e.ok(), c.ok) << e.status();
    if (!c.ok) {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(e.status().message(), HasSubstr("cannot hold the 2 special tokens"));
      continue;
    }
    const std::vector<int32_t> pieces = Pieces(c.text);
    const int64_t n = static_cast<int64_t>(pieces.size());
    const int64_t budget = c.max_length == 0 ? n : c.max_length - 2;
    const SingleKeep keep = PlanSingle(n, budget, c.strategy);
    std::vector<int32_t> want = {kClsId};
    want.insert(want.end(), pieces.begin(), pieces.begin() + keep.head);
    want.insert(want.end(), pieces.end() - keep.tail, pieces.end());
    want.push_back(kSepId);
    EXPECT_EQ(e->ids, want);
    if (c.max_length > 0) {
      EXPECT_LE(static_cast<int64_t>(e->ids.size()), c.max_length);
      if (n + 2 >= c.max_length) {
        EXPECT_EQ(static_cast<int64_t>(e->ids.size()), c.max_length);
      }
    }
  }
}

TEST_F(TokenizerTest, HeadTailKeepsBothEnds) {
  const std::vector<int32_t> pieces = Pieces(kLongText);
  ASSERT_GT(pieces.size(), 30u);
  EncodeOptions options;
  options.max_length = 22;  // budget 20: 5 head + 15 tail
  absl::StatusOr<Encoding> e = tok_->Encode(kLongText, options);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->ids.size(), 22u);
  EXPECT_TRUE(std::equal(pieces.begin(), pieces.begin() + 5, e->ids.begin() + 1));
  EXPECT_TRUE(std::equal(pieces.end() - 15, pieces.end(), e->ids.begin() + 6));
  options.head_fraction = 0.5;
  e = tok_->Encode(kLongText, options);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(std::equal(pieces.begin(), pieces.begin() + 10, e->ids.begin() + 1));
}

struct PairCase {
  const char* name;
  const char* first;
  const char* second;
  int64_t max_length;
  PairTruncation strategy;
  bool ok;
};

TEST_F(TokenizerTest, PairTruncationTable) {
  const PairCase cases[] = {
      {"longest_first", kLongText, "a short one", 20, PairTruncation::kLongestFirst, true},
      {"longest_first both long", kLongText, kLongText, 21, PairTruncation::kLongestFirst, true},
      {"only_first", kLongText, "a short one", 20, PairTruncation::kOnlyFirst, true},
      {"only_second", "a short one", kLongText, 20, PairTruncation::kOnlySecond, true},
      {"empty second", kLongText, "", 10, PairTruncation::kLongestFirst, true},
      {"empty first", "", kLongText, 10, PairTruncation::kLongestFirst, true},
      {"both empty", "", "", 3, PairTruncation::kOnlyFirst, true},
      {"only_first cannot fit", "short", kLongText, 10, PairTruncation::kOnlyFirst, false},
      {"only_second cannot fit", kLongText, "short", 10, PairTruncation::kOnlySecond, false},
      {"only_second empty second", kLongText, "", 10, PairTruncation::kOnlySecond, false},
      {"max_length below specials", "a", "b", 2, PairTruncation::kLongestFirst, false},
  };
  for (const PairCase& c : cases) {
    SCOPED_TRACE(c.name);
    EncodeOptions options;
    options.max_length = c.max_length;
    options.pair_truncation = c.strategy;
    absl::StatusOr<Encoding> e = tok_->EncodePair(c.first, c.second, options);
    ASSERT_EQ(e.ok(), c.ok) << e.status();
    if (!c.ok) {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    const std::vector<int32_t> a = Pieces(c.first), b = Pieces(c.second);
    absl::StatusOr<PairKeep> keep =
        PlanPair(static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size()), c.max_length - 3,
                 c.strategy);
    ASSERT_TRUE(keep.ok());
    std::vector<int32_t> want = {kClsId};
    want.insert(want.end(), a.begin(), a.begin() + keep->first);
    want.push_back(kSepId);
    want.insert(want.end(), b.begin(), b.begin() + keep->second);
    want.push_back(kSepId);
    EXPECT_EQ(e->ids, want);
    EXPECT_LE(static_cast<int64_t>(e->ids.size()), c.max_length);
    ASSERT_EQ(e->type_ids.size(), e->ids.size());
    EXPECT_EQ(std::count(e->type_ids.begin(), e->type_ids.end(), 1), keep->second + 1);
  }
}

TEST_F(TokenizerTest, WindowsCoverTheTextWithTheStride) {
  const std::vector<int32_t> pieces = Pieces(kLongText);
  const int64_t max_length = 12, stride = 3, budget = max_length - 2;
  absl::StatusOr<std::vector<Encoding>> windows =
      tok_->EncodeWindows(kLongText, max_length, stride);
  ASSERT_TRUE(windows.ok()) << windows.status();
  const std::vector<int64_t> starts =
      WindowStarts(static_cast<int64_t>(pieces.size()), budget, stride);
  ASSERT_EQ(windows->size(), starts.size());
  ASSERT_GT(windows->size(), 2u);
  std::vector<int32_t> rebuilt;
  for (size_t k = 0; k < windows->size(); ++k) {
    const std::vector<int32_t>& ids = (*windows)[k].ids;
    ASSERT_LE(static_cast<int64_t>(ids.size()), max_length);
    EXPECT_EQ(ids.front(), kClsId);
    EXPECT_EQ(ids.back(), kSepId);
    const size_t skip = k == 0 ? 0 : static_cast<size_t>(stride);  // the overlap
    rebuilt.insert(rebuilt.end(), ids.begin() + 1 + skip, ids.end() - 1);
  }
  EXPECT_EQ(rebuilt, pieces);

  absl::StatusOr<std::vector<Encoding>> empty = tok_->EncodeWindows("", max_length, stride);
  ASSERT_TRUE(empty.ok());
  ASSERT_EQ(empty->size(), 1u);
  EXPECT_THAT((*empty)[0].ids, ElementsAre(kClsId, kSepId));
  EXPECT_FALSE(tok_->EncodeWindows(kLongText, 12, 10).ok());  // stride >= budget
  EXPECT_FALSE(tok_->EncodeWindows(kLongText, 2, 0).ok());
}

TEST_F(TokenizerTest, DecodeDropsStructureTokensAndRejectsBadIds) {
  const std::string text = "i went to the school.";
  absl::StatusOr<Encoding> e = tok_->EncodePair(text, text, {});
  ASSERT_TRUE(e.ok());
  absl::StatusOr<std::string> decoded = tok_->Decode(Pieces(text));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, text);
  std::vector<int32_t> with_specials = {kClsId, kPadId, kMaskId};
  const std::vector<int32_t> pieces = Pieces(text);
  with_specials.insert(with_specials.end(), pieces.begin(), pieces.end());
  with_specials.push_back(kSepId);
  EXPECT_EQ(*tok_->Decode(with_specials), text);
  absl::StatusOr<std::string> bad = tok_->Decode({5, tok_->vocab_size()});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("position 1"));
  EXPECT_FALSE(tok_->Decode({-3}).ok());
}

TEST_F(TokenizerTest, InvalidUtf8AndControlBytesDoNotCrash) {
  const std::string nasty("abc\xff\xfe\xc0\x80 \x01\x02\0zz", 14);
  absl::StatusOr<Encoding> e = tok_->Encode(nasty, {});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->ids.front(), kClsId);
  EXPECT_EQ(e->ids.back(), kSepId);
}

TEST_F(TokenizerTest, SaveLoadRoundTripAndBadModels) {
  const std::string path = ::testing::TempDir() + "/tokenizer_test_roundtrip.model";
  ASSERT_TRUE(tok_->Save(path).ok());
  absl::StatusOr<Tokenizer> loaded = Tokenizer::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->Serialized(), tok_->Serialized());
  EXPECT_EQ(*loaded->EncodePieces(kLongText), Pieces(kLongText));

  EXPECT_EQ(Tokenizer::Load(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  {
    std::ofstream out(path, std::ios::trunc);
    out << "this is not a protobuf";
  }
  absl::StatusOr<Tokenizer> garbage = Tokenizer::Load(path);
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr(path));
  std::remove(path.c_str());

  std::string error;
  const std::string foreign =
      testing::TrainDefaultLayoutModel(SharedDataFile("botchan.txt"), 500, &error);
  ASSERT_FALSE(foreign.empty()) << error;
  absl::StatusOr<Tokenizer> refused = Tokenizer::FromSerialized(foreign);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("[PAD]=0"));
}

TEST(TokenizerTrainTest, BpeFromSentencesWithUserSymbols) {
  const std::string botchan = SharedDataFile("botchan.txt");
  if (botchan.empty()) GTEST_SKIP() << "no botchan.txt";
  std::ifstream in(botchan);
  std::vector<std::string> sentences;
  for (std::string line; std::getline(in, line) && sentences.size() < 1500;) {
    if (!line.empty()) sentences.push_back(line);
  }
  TrainOptions options;
  options.model_type = "bpe";
  options.vocab_size = 400;
  options.character_coverage = 1.0;
  options.user_defined_symbols = {"<url>", "<num>"};
  absl::StatusOr<Tokenizer> bpe = Tokenizer::TrainFromSentences(sentences, options);
  ASSERT_TRUE(bpe.ok()) << bpe.status();
  EXPECT_EQ(bpe->vocab_size(), 400);
  EXPECT_EQ(bpe->PieceToId("[MASK]"), kMaskId);
  EXPECT_EQ(bpe->PieceToId("<url>"), kNumSpecialTokens);
  EXPECT_EQ(bpe->PieceToId("<num>"), kNumSpecialTokens + 1);
  absl::StatusOr<std::vector<int32_t>> ids = bpe->EncodePieces("see<url>now");
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ::testing::Contains(kNumSpecialTokens));
}

// Issue 13.4: a vocabulary larger than a small corpus supports is SentencePiece's error with the
// hard limit (the default), and a smaller vocabulary with hard_vocab_limit = false.
TEST(TokenizerTrainTest, SoftVocabularyLimitFitsASmallCorpus) {
  std::vector<std::string> sentences;
  for (int i = 0; i < 200; ++i) {
    sentences.push_back("a dull and tedious film , scene " + std::to_string(i));
  }
  TrainOptions options;
  options.vocab_size = 16000;
  EXPECT_THAT(Tokenizer::TrainFromSentences(sentences, options).status().message(),
              HasSubstr("Vocabulary size too high"));
  options.hard_vocab_limit = false;
  absl::StatusOr<Tokenizer> soft = Tokenizer::TrainFromSentences(sentences, options);
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_GT(soft->vocab_size(), kNumSpecialTokens);
  EXPECT_LT(soft->vocab_size(), 16000);
  EXPECT_EQ(soft->PieceToId("[MASK]"), kMaskId);
}

TEST(TokenizerTrainTest, BadOptionsFailBeforeTraining) {
  const std::vector<std::string> sentences = {"a b c"};
  TrainOptions options;
  options.model_type = "word_piece";
  EXPECT_THAT(Tokenizer::TrainFromSentences(sentences, options).status().message(),
              HasSubstr("not unigram or bpe"));
  options = {};
  options.vocab_size = 5;
  EXPECT_THAT(Tokenizer::TrainFromSentences(sentences, options).status().message(),
              HasSubstr("below the minimum"));
  options = {};
  options.user_defined_symbols = {"a,b"};
  EXPECT_THAT(Tokenizer::TrainFromSentences(sentences, options).status().message(),
              HasSubstr("comma"));
  options = {};
  options.character_coverage = 0;
  EXPECT_FALSE(Tokenizer::TrainFromSentences(sentences, options).ok());
  EXPECT_FALSE(Tokenizer::TrainFromSentences({}, {}).ok());
  EXPECT_EQ(Tokenizer::TrainFromFiles({"/nonexistent/file.txt"}, {}).status().code(),
            absl::StatusCode::kNotFound);
  // A vocabulary larger than the text supports is SentencePiece's error, passed on.
  options = {};
  options.vocab_size = 5000;
  EXPECT_FALSE(Tokenizer::TrainFromSentences(sentences, options).ok());
}

TEST_F(TokenizerTest, CacheFingerprintTracksDataModelAndOptions) {
  const std::string path = ::testing::TempDir() + "/fingerprint_test.tsv";
  {
    std::ofstream out(path);
    out << "label\ttext\n1\tsome text\n";
  }
  const std::string opts = DescribeOptions({});
  absl::StatusOr<uint64_t> base = CacheFingerprint({path}, *tok_, opts);
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(*CacheFingerprint({path}, *tok_, opts), *base);
  EncodeOptions other;
  other.max_length = 128;
  EXPECT_NE(*CacheFingerprint({path}, *tok_, DescribeOptions(other)), *base);
  {
    std::ofstream out(path, std::ios::app);
    out << "0\tmore\n";
  }
  EXPECT_NE(*CacheFingerprint({path}, *tok_, opts), *base);
  std::remove(path.c_str());
  EXPECT_FALSE(CacheFingerprint({path}, *tok_, opts).ok());
}

}  // namespace
}  // namespace padless::tokenize
