// XLM-R's SentencePiece layout: a model directory with sentencepiece.bpe.model (SentencePiece's
// default ids) loads with fairseq's offset (<s>=0 <pad>=1 </s>=2 <unk>=3, pieces at their
// SentencePiece id + 1, <mask> last) and RoBERTa templates, checked against SentencePiece's own
// ids; the bare file is still refused, as padless cannot tell it is XLM-R's.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
#include "spm_reference.h"
#include "trained_model.h"

namespace padless::tokenize {
namespace {

using ::testing::ElementsAre;

TEST(XlmrTokenizerTest, FairseqOffsetAndRobertaTemplates) {
  const std::string botchan = testing::SharedDataFile("botchan.txt");
  if (botchan.empty()) GTEST_SKIP() << "no botchan.txt";
  std::string error;
  const std::string model = testing::TrainDefaultLayoutModel(botchan, 500, &error);
  ASSERT_FALSE(model.empty()) << error;
  const std::string dir = ::testing::TempDir() + "/xlmr_tokenizer_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/sentencepiece.bpe.model", std::ios::binary) << model;

  absl::StatusOr<Tokenizer> t = Tokenizer::Load(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vocab_size(), 502);
  const SpecialIds& s = t->special_ids();
  EXPECT_THAT(std::vector<int32_t>({s.pad, s.unk, s.cls, s.sep, s.mask}),
              ElementsAre(1, 3, 0, 2, 501));
  EXPECT_EQ(t->IdToPiece(0), "<s>");
  EXPECT_EQ(t->IdToPiece(3), "<unk>");
  EXPECT_EQ(t->IdToPiece(501), "<mask>");
  EXPECT_EQ(t->PieceToId("<pad>"), 1);
  EXPECT_EQ(t->file_name(), "sentencepiece.bpe.model");

  const std::vector<std::string> texts = {"I am a cat. ¶ Ω unknown ☃", "said the old man"};
  std::vector<std::vector<int>> ref;
  ASSERT_TRUE(testing::ReferenceEncode(model, texts, &ref, &error)) << error;
  std::vector<std::vector<int32_t>> shifted(2);
  for (int i = 0; i < 2; ++i) {
    for (int id : ref[i]) shifted[i].push_back(id == 0 ? 3 : id + 1);
  }
  EXPECT_NE(std::count(shifted[0].begin(), shifted[0].end(), 3), 0) << "want an unknown piece";
  EncodeOptions o;
  o.max_length = 0;
  absl::StatusOr<Encoding> single = t->Encode(texts[0], o);
  ASSERT_TRUE(single.ok());
  std::vector<int32_t> want = {0};
  want.insert(want.end(), shifted[0].begin(), shifted[0].end());
  want.push_back(2);
  EXPECT_EQ(single->ids, want);

  absl::StatusOr<Encoding> pair = t->EncodePair(texts[0], texts[1], o);
  ASSERT_TRUE(pair.ok());
  want.push_back(2);
  want.insert(want.end(), shifted[1].begin(), shifted[1].end());
  want.push_back(2);
  EXPECT_EQ(pair->ids, want);
  EXPECT_EQ(pair->type_ids, std::vector<int8_t>(want.size(), 0));
  o.max_length = 3;
  EXPECT_FALSE(t->EncodePair(texts[0], texts[1], o).ok());  // <s> a </s></s> b </s> needs 4
  absl::StatusOr<std::string> decoded = t->Decode(single->ids);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->substr(0, 10), "I am a cat");

  // The saved model keeps its name, so the directory loads again with the same layout.
  const std::string again = dir + "_saved";
  std::filesystem::create_directories(again);
  ASSERT_TRUE(t->Save(again + "/" + t->file_name()).ok());
  absl::StatusOr<Tokenizer> reloaded = Tokenizer::Load(again);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->special_ids().mask, 501);
  const absl::StatusOr<Tokenizer> bare = Tokenizer::Load(dir + "/sentencepiece.bpe.model");
  EXPECT_EQ(bare.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace padless::tokenize
