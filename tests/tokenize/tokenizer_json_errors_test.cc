// Broken tokenizer inputs give a clear error naming the file (and the field), never a crash:
// missing path, directory without a tokenizer, empty, binary, truncated JSON, unsupported types
// and components, missing [UNK], vocabulary ids out of range or duplicated, bad added tokens.
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/tokenize/tokenizer.h"
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
  for (const char* type : {"BPE", "Unigram", "WordLevel"}) {
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

}  // namespace
}  // namespace padless::tokenize
