// WordPiece behaviour on a tiny tokenizer.json (tiny_wordpiece.h): BERT normalization and
// pre-tokenization, greedy longest-match with ##, [UNK] for uncoverable and over-long words,
// added tokens in raw text, the templates with the file's special ids, decoding, Save/Load,
// model directories and Hugging Face export (checked with transformers when Python has it).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
#include "tiny_wordpiece.h"
#include "trained_model.h"

namespace padless::tokenize {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tokenizer Tiny() {
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(testing::TinyWordPieceJson().dump());
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

std::vector<int32_t> Ids(const Tokenizer& t, const std::string& text) {
  EncodeOptions o;
  o.max_length = 0;
  absl::StatusOr<Encoding> e = t.Encode(text, o);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? e->ids : std::vector<int32_t>{-1};
}

TEST(WordPieceTest, SpecialIdsComeFromTheFile) {
  const Tokenizer t = Tiny();
  const SpecialIds& s = t.special_ids();
  EXPECT_THAT(std::vector<int32_t>({s.pad, s.unk, s.cls, s.sep, s.mask}),
              ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(t.vocab_size(), 19);
  EXPECT_EQ(t.PieceToId("##able"), 9);
  EXPECT_EQ(t.PieceToId("no-such-piece"), 1);
  EXPECT_EQ(t.IdToPiece(15), "中");
  EXPECT_EQ(t.IdToPiece(19), "");
  EXPECT_EQ(t.file_name(), "tokenizer.json");
  EXPECT_THAT(t.backend_name(), HasSubstr("WordPiece"));
}

TEST(WordPieceTest, NormalizesSplitsAndMatchesLongestPieces) {
  const Tokenizer t = Tiny();
  EXPECT_THAT(Ids(t, "Hello, unaffable world!"), ElementsAre(2, 5, 10, 7, 8, 9, 6, 11, 3));
  // Accents stripped (strip_accents null follows lowercase), CJK split, unknown char -> [UNK].
  EXPECT_THAT(Ids(t, "Café 中文!"), ElementsAre(2, 14, 15, 1, 11, 3));
  // A word that cannot be covered is one [UNK], not its covered prefix.
  EXPECT_THAT(Ids(t, "hellox world"), ElementsAre(2, 1, 6, 3));
  // max_input_chars_per_word is 10: ten characters are split, eleven are [UNK].
  std::vector<int32_t> ten = {2, 12};
  ten.insert(ten.end(), 9, 13);
  ten.push_back(3);
  EXPECT_THAT(Ids(t, "abbbbbbbbb"), ElementsAreArray(ten));
  EXPECT_THAT(Ids(t, "abbbbbbbbbb"), ElementsAre(2, 1, 3));
  // Control characters vanish, every whitespace separates.
  EXPECT_THAT(Ids(t, "hel\x01lo\t\u00a0world\u200b"), ElementsAre(2, 5, 6, 3));
  EXPECT_THAT(Ids(t, ""), ElementsAre(2, 3));
}

TEST(WordPieceTest, EncodePiecesReplacesPoisonedOutput) {
  const Tokenizer t = Tiny();
  std::vector<int32_t> ids = {-7, -7, -7, -7, -7};
  ASSERT_TRUE(t.EncodePieces("Hello world", &ids).ok());
  EXPECT_THAT(ids, ElementsAre(5, 6));
  Tokenizer::Scratch scratch;
  scratch.first.assign(9, -7);
  std::vector<int32_t> appended = {42};
  std::vector<int8_t> types;
  EncodeOptions o;
  ASSERT_TRUE(t.EncodeAppend("hello", nullptr, o, &scratch, &appended, &types).ok());
  EXPECT_THAT(appended, ElementsAre(42, 2, 5, 3));
}

TEST(WordPieceTest, AddedTokensMatchRawTextOnly) {
  const Tokenizer t = Tiny();
  EXPECT_THAT(Ids(t, "[MASK]hello [SEP]"), ElementsAre(2, 4, 5, 3, 3));
  // Not normalized: lowercase "[mask]" is ordinary text ([ and ] and "mask" are unknown).
  EXPECT_THAT(Ids(t, "[mask]"), ElementsAre(2, 1, 1, 1, 3));
}

// A normalized added token is matched with its normalized content in the normalized text; the
// expected ids are what Hugging Face tokenizers 0.23 gives for the same file.
TEST(WordPieceTest, NormalizedAddedTokensMatchAfterNormalization) {
  nlohmann::json j = testing::TinyWordPieceJson();
  j["added_tokens"].push_back({{"id", 19},
                               {"content", "Foo-Bär"},
                               {"special", false},
                               {"single_word", false},
                               {"lstrip", false},
                               {"rstrip", false},
                               {"normalized", true}});
  absl::StatusOr<Tokenizer> t = Tokenizer::FromSerialized(j.dump());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vocab_size(), 20);
  EXPECT_THAT(Ids(*t, "hello FOO-BAR! foo-bärhello"), ElementsAre(2, 5, 19, 11, 19, 5, 3));
  EXPECT_THAT(Ids(*t, "xfoo-barx"), ElementsAre(2, 1, 19, 1, 3));
  EXPECT_EQ(t->PieceToId("Foo-Bär"), 19);
}

TEST(WordPieceTest, PairsTruncationAndWindowsUseTheFileIds) {
  const Tokenizer t = Tiny();
  EncodeOptions o;
  o.max_length = 0;
  absl::StatusOr<Encoding> pair = t.EncodePair("hello", "world", o);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_THAT(pair->ids, ElementsAre(2, 5, 3, 6, 3));
  EXPECT_THAT(pair->type_ids, ElementsAre(0, 0, 0, 1, 1));
  o.max_length = 4;
  o.truncation = Truncation::kHead;
  absl::StatusOr<Encoding> cut = t.Encode("hello world hello", o);
  ASSERT_TRUE(cut.ok());
  EXPECT_THAT(cut->ids, ElementsAre(2, 5, 6, 3));
  absl::StatusOr<std::vector<Encoding>> windows = t.EncodeWindows("hello world world hello", 4, 0);
  ASSERT_TRUE(windows.ok());
  ASSERT_EQ(windows->size(), 2u);
  EXPECT_THAT((*windows)[1].ids, ElementsAre(2, 6, 5, 3));
}

TEST(WordPieceTest, DecodeJoinsContinuationPieces) {
  const Tokenizer t = Tiny();
  EXPECT_EQ(*t.Decode({2, 7, 8, 9, 10, 6, 3}), "unaffable, world");
  EXPECT_EQ(*t.Decode({5, 16, 17, 18}), "hello ' s.");
  EXPECT_EQ(*t.Decode({5, 1, 6, 0, 0}), "hello [UNK] world");
  EXPECT_FALSE(t.Decode({5, 19}).ok());
}

TEST(WordPieceTest, SaveLoadAndModelDirectory) {
  const Tokenizer t = Tiny();
  const std::string path = testing::WriteTemp("placeholder", "");
  const std::string dir = std::filesystem::path(path).parent_path().string() + "/model";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(t.Save(dir + "/" + t.file_name()).ok());
  for (const std::string& source : {dir, dir + "/tokenizer.json"}) {
    absl::StatusOr<Tokenizer> loaded = Tokenizer::Load(source);
    ASSERT_TRUE(loaded.ok()) << source << ": " << loaded.status();
    EXPECT_EQ(loaded->Serialized(), t.Serialized());
    EXPECT_EQ(Ids(*loaded, "Hello, unaffable world!"), Ids(t, "Hello, unaffable world!"));
  }
}

TEST(WordPieceTest, ExportHuggingFaceWritesAutoTokenizerFiles) {
  const Tokenizer t = Tiny();
  const std::string dir =
      std::filesystem::path(testing::WriteTemp("placeholder", "")).parent_path().string() + "/hf";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(t.ExportHuggingFace(dir).ok());
  std::ifstream vocab(dir + "/vocab.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(vocab, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 19u);
  EXPECT_EQ(lines[8], "##aff");
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  }
  // transformers' AutoTokenizer gives the same ids, where Python has it.
  const std::string text = "Hello, unaffable world! Café 中 [MASK]hello";
  const std::string out = dir + "/hf_ids.txt";
  const std::string command = absl::StrCat(
      "python3 -c \"import sys; from transformers import AutoTokenizer; "
      "t = AutoTokenizer.from_pretrained(sys.argv[1]); "
      "print(' '.join(map(str, t(sys.argv[2])['input_ids'])))\" '",
      dir, "' '", text, "' > '", out, "' 2>/dev/null");
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "Python transformers unavailable";
  std::ifstream in(out);
  std::string hf;
  std::getline(in, hf);
  EXPECT_EQ(hf, absl::StrJoin(Ids(t, text), " "));
}

TEST(WordPieceTest, SentencePieceCannotBeExported) {
  const Tokenizer* spm = testing::BotchanTokenizer();
  if (spm == nullptr) GTEST_SKIP() << "no botchan data";
  const absl::Status s = spm->ExportHuggingFace(::testing::TempDir());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("SentencePiece"));
  EXPECT_EQ(spm->file_name(), "tokenizer.model");
}

}  // namespace
}  // namespace padless::tokenize
