// Broken tokenizer inputs give a clear error naming the file (and the field), never a crash:
// missing path, directory without a tokenizer, empty, binary, truncated JSON, unsupported types
// and components, missing [UNK], vocabulary ids out of range or duplicated, bad added tokens;
// for byte-level BPE also bad merges and the BPE options padless does not implement.
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
#include "tiny_bpe.h"
#include "tiny_wordpiece.h"

namespace padless::tokenize {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Loads `content` written to a file and expects an error of `code` naming the file and `field`.
void ExpectRejected(const std::string& content, absl::StatusCode code, const std::string& field) {
  const std::string path = testing::WriteTemp("tokenizer.json", content);
  const absl::StatusOr<Tokenizer> t = Tokenizer::Load(path);
  ASSERT_FALSE(t.ok()) << field;
  EXPECT_EQ(t.status().code(), code) << t.status();
  EXPECT_THAT(t.status().message(), AllOf(HasSubstr(path), HasSubstr(field)));
}

TEST(TokenizerJsonErrorsTest, MissingPathAndDirectoryWithoutTokenizer) {
  const std::string missing = ::testing::TempDir() + "/no/such/tokenizer.json";
  absl::StatusOr<Tokenizer> t = Tokenizer::Load(missing);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr(missing));
  const std::string dir = ::testing::TempDir() + "/tokenizer_json_errors_empty_dir";
  std::filesystem::create_directories(dir);
  t = Tokenizer::Load(dir);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), AllOf(HasSubstr(dir), HasSubstr("tokenizer.json")));
}

TEST(TokenizerJsonErrorsTest, EmptyBinaryAndTruncatedFiles) {
  ExpectRejected("", absl::StatusCode::kInvalidArgument, "empty");
  ExpectRejected(std::string("\x00\x01\xff\xfe garbage\x80", 14),
                 absl::StatusCode::kInvalidArgument, "SentencePiece");
  const std::string json = testing::TinyWordPieceJson().dump();
  ExpectRejected(json.substr(0, json.size() / 2), absl::StatusCode::kInvalidArgument,
                 "not valid JSON");
  ExpectRejected("[1, 2]", absl::StatusCode::kInvalidArgument, "neither a tokenizer.json");
  ExpectRejected("{\"model\": 5}", absl::StatusCode::kInvalidArgument, "model");
}

TEST(TokenizerJsonErrorsTest, UnsupportedTypesNameTheType) {
  for (const char* type : {"Unigram", "WordLevel"}) {
    nlohmann::json j = testing::TinyWordPieceJson();
    j["model"]["type"] = type;
    ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, type);
  }
  nlohmann::json j = testing::TinyWordPieceJson();
  j["normalizer"] = {{"type", "Lowercase"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "normalizer.type 'Lowercase'");
  j = testing::TinyWordPieceJson();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "pre_tokenizer.type 'ByteLevel'");
  j = testing::TinyWordPieceJson();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "RobertaProcessing");
  j = testing::TinyWordPieceJson();
  j.erase("model");
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model");
}

TEST(TokenizerJsonErrorsTest, BadVocabulary) {
  nlohmann::json j = testing::TinyWordPieceJson();
  j["model"]["vocab"].erase("[UNK]");
  j["model"]["vocab"]["zzz"] = 1;
  j["added_tokens"] = nlohmann::json::array();
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.unk_token");
  j = testing::TinyWordPieceJson();
  j["model"]["vocab"]["extra"] = 99;
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "outside [0, 20)");
  j = testing::TinyWordPieceJson();
  j["model"]["vocab"]["hello"] = 6;  // "world" has 6 too, and 5 is left without a piece
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "given to both");
  j = testing::TinyWordPieceJson();
  j["model"]["vocab"]["hello"] = "five";
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.vocab");
  j = testing::TinyWordPieceJson();
  j["model"]["vocab"] = nlohmann::json::object();
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.vocab");
}

TEST(TokenizerJsonErrorsTest, BadAddedTokensAndSpecials) {
  nlohmann::json j = testing::TinyWordPieceJson();
  j["added_tokens"][1]["id"] = 5;  // [UNK] claims "hello"'s id
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "added_tokens");
  j = testing::TinyWordPieceJson();
  j["added_tokens"].push_back({{"id", 40}, {"content", "<new>"}});  // leaves ids 19..39 empty
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "no token has id 19");
  j = testing::TinyWordPieceJson();
  j["post_processor"]["special_tokens"]["[CLS]"]["ids"] = {500};
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "[CLS]");
  j = testing::TinyWordPieceJson();
  j["added_tokens"][4]["single_word"] = true;
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "single_word");
  j = testing::TinyWordPieceJson();
  j["normalizer"]["lowercase"] = "yes";
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "unexpected JSON type");
}

TEST(TokenizerJsonErrorsTest, ByteLevelBpeUnsupportedOptionsNameTheField) {
  const std::pair<const char*, nlohmann::json> options[] = {{"dropout", 0.1},
                                                            {"byte_fallback", true},
                                                            {"continuing_subword_prefix", "##"},
                                                            {"end_of_word_suffix", "</w>"}};
  for (const auto& [key, value] : options) {
    nlohmann::json j = testing::TinyByteLevelBpeJson();
    j["model"][key] = value;
    ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, std::string("model.") + key);
  }
  nlohmann::json j = testing::TinyByteLevelBpeJson();
  j["normalizer"] = {{"type", "NFKC"}};  // NFC (ModernBERT's) is supported
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "normalizer.type 'NFKC'");
  j = testing::TinyByteLevelBpeJson();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "pre_tokenizer.type 'Whitespace'");
  j = testing::TinyByteLevelBpeJson();
  j["pre_tokenizer"]["use_regex"] = false;
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "pre_tokenizer.use_regex");
  j = testing::TinyByteLevelBpeJson();
  j["decoder"] = {{"type", "Metaspace"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "decoder.type 'Metaspace'");
  j = testing::TinyByteLevelBpeJson();
  j["post_processor"] = {{"type", "BertProcessing"}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented,
                 "post_processor.type 'BertProcessing'");
  j = testing::TinyByteLevelBpeJson();
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", nlohmann::json::array()}};
  ExpectRejected(j.dump(), absl::StatusCode::kUnimplemented, "RoBERTa's template");
}

TEST(TokenizerJsonErrorsTest, ByteLevelBpeBrokenMergesAndVocabulary) {
  const nlohmann::json bad_merges[] = {
      nlohmann::json::array({nlohmann::json::array({"a", "zz"})}),  // zz is not a piece
      nlohmann::json::array({nlohmann::json::array({"a", "c"})}),   // nor is ac
      nlohmann::json::array({"b c d"}),
      nlohmann::json::array({nlohmann::json::array({"b"})}),
      nlohmann::json::array({5}),
      "b c",
  };
  for (const nlohmann::json& merges : bad_merges) {
    nlohmann::json j = testing::TinyByteLevelBpeJson();
    j["model"]["merges"] = merges;
    ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.merges");
  }
  nlohmann::json j = testing::TinyByteLevelBpeJson();
  j["model"].erase("merges");
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.merges");
  j = testing::TinyByteLevelBpeJson();
  j["model"]["vocab"]["zz"] = 40;
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.vocab");
  j = testing::TinyByteLevelBpeJson();
  j["model"]["vocab"]["abc"] = 9;  // "bc" has 9 too
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.vocab");
  j = testing::TinyByteLevelBpeJson();
  j["model"]["unk_token"] = "[UNK]";
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "model.unk_token");
  j = testing::TinyByteLevelBpeJson();
  j["model"]["unk_token"] = 3;
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "unexpected JSON type");
  j = testing::TinyByteLevelBpeJson();
  j["post_processor"]["sep"] = {"</s>", 99};
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "</s>");
  j = testing::TinyByteLevelBpeJson();
  j["post_processor"]["cls"] = "<s>";
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "post_processor.cls");
  j = testing::TinyByteLevelBpeJson();
  j["added_tokens"][1]["id"] = 5;  // <pad> claims "a"'s id
  ExpectRejected(j.dump(), absl::StatusCode::kInvalidArgument, "added_tokens");
}

}  // namespace
}  // namespace padless::tokenize
