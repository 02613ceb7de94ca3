// Token ids as TEI reads and writes them: /decode's text against Hugging Face `tokenizers`'
// decode (goldens made by make_decode_goldens.py, so no Python is needed here), and the engine
// requests of token-id inputs on the embedding routes (embed_inputs.h): the vocabulary check,
// special tokens added only with a prompt, the prompt put before the decoded text.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "embed_inputs.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "padless/base/read_file.h"
#include "padless/serve/http/token_decode.h"
#include "padless/tokenize/tokenizer.h"
#include "serve_fixtures.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

const std::string kSource = PADLESS_SOURCE_DIR;

json Goldens() {
  absl::StatusOr<std::string> text =
      base::ReadFile(kSource + "/tests/serve/http/data/decode_goldens.json");
  EXPECT_TRUE(text.ok()) << text.status();
  return json::parse(text.ok() ? *text : "{}");
}

void ExpectGoldens(const std::string& name) {
  const json goldens = Goldens();
  ASSERT_TRUE(goldens.contains(name));
  const json& set = goldens[name];
  absl::StatusOr<tokenize::Tokenizer> tokenizer =
      tokenize::Tokenizer::Load(kSource + "/" + set["tokenizer"].get<std::string>());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  ASSERT_GE(set["cases"].size(), 20u);
  for (const json& c : set["cases"]) {
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    for (const bool skip : {false, true}) {
      absl::StatusOr<std::string> text = DecodeTokenIds(*tokenizer, ids, skip);
      ASSERT_TRUE(text.ok()) << text.status();
      EXPECT_EQ(*text, c[skip ? "skip_special" : "keep_special"].get<std::string>())
          << name << " ids " << c["ids"].dump() << " skip_special_tokens " << skip;
    }
  }
}

TEST(TokenDecodeTest, WordPieceMatchesTokenizersDecode) { ExpectGoldens("wordpiece"); }
TEST(TokenDecodeTest, ByteLevelBpeMatchesTokenizersDecode) { ExpectGoldens("bytelevel_bpe"); }

TEST(TokenDecodeTest, IdsOutsideTheVocabularyAreRefused) {
  const tokenize::Tokenizer tokenizer = testing::SmallTokenizer();
  for (const bool skip : {false, true}) {
    EXPECT_FALSE(
        DecodeTokenIds(tokenizer, std::vector<int32_t>{tokenizer.vocab_size()}, skip).ok());
    EXPECT_FALSE(DecodeTokenIds(tokenizer, std::vector<int32_t>{-1}, skip).ok());
  }
}

class TokenIdInputsTest : public ::testing::Test {
 protected:
  TokenIdInputsTest() : tokenizer_(testing::SmallTokenizer()) {
    model_.prompts = {{"query", "query: "}};
  }
  std::variant<std::vector<EngineRequest>, ApiError> Requests(std::vector<uint32_t> ids,
                                                              std::optional<std::string> prompt) {
    EmbedInputOptions options;
    options.prompt_name = std::move(prompt);
    return EmbedEngineRequests({{"", std::move(ids)}}, options, model_, tokenizer_);
  }
  tokenize::Tokenizer tokenizer_;
  EmbeddingInfo model_;
};

// Without a prompt TEI encodes the decoded ids again without adding special tokens: the ids a
// client sends are the model input, [CLS]/[SEP] only where the client put them.
TEST_F(TokenIdInputsTest, WithoutAPromptTheIdsAreTheInput) {
  const std::vector<int32_t> pieces = *tokenizer_.EncodePieces(testing::Words(4, 1));
  std::vector<uint32_t> ids(pieces.begin(), pieces.end());
  auto requests = Requests(ids, std::nullopt);
  ASSERT_TRUE(std::holds_alternative<std::vector<EngineRequest>>(requests));
  const EngineRequest& r = std::get<0>(requests)[0];
  EXPECT_EQ(r.ids, pieces);
  EXPECT_TRUE(r.text.empty());
}

// With a prompt TEI decodes the ids without their special tokens, puts the prompt before the text
// and encodes it with the special tokens: a text request of the engine, which adds them.
TEST_F(TokenIdInputsTest, WithAPromptTheDecodedTextFollowsIt) {
  const std::string words = testing::Words(4, 2);
  const std::vector<int32_t> pieces = *tokenizer_.EncodePieces(words);
  const tokenize::SpecialIds& special = tokenizer_.special_ids();
  std::vector<uint32_t> ids = {static_cast<uint32_t>(special.cls)};
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(static_cast<uint32_t>(special.sep));
  auto requests = Requests(ids, "query");
  ASSERT_TRUE(std::holds_alternative<std::vector<EngineRequest>>(requests));
  const EngineRequest& r = std::get<0>(requests)[0];
  EXPECT_TRUE(r.ids.empty());
  EXPECT_EQ(r.text, "query: " + *tokenizer_.Decode(pieces));
}

// TEI's decode drops an unknown id without a word; padless refuses it with TEI's 422 Validation.
TEST_F(TokenIdInputsTest, IdsOutsideTheVocabularyAre422) {
  for (const std::optional<std::string>& prompt :
       {std::optional<std::string>(), std::optional<std::string>("query")}) {
    auto requests = Requests({5, static_cast<uint32_t>(tokenizer_.vocab_size())}, prompt);
    ASSERT_TRUE(std::holds_alternative<ApiError>(requests));
    const ApiError& e = std::get<ApiError>(requests);
    EXPECT_EQ(e.status, 422);
    EXPECT_EQ(e.type, ErrorType::kValidation);
    EXPECT_NE(e.message.find(
                  absl::StrCat("token id ", tokenizer_.vocab_size(), " is outside the vocabulary")),
              std::string::npos)
        << e.message;
  }
  EXPECT_TRUE(std::holds_alternative<ApiError>(Requests({4294967295u}, std::nullopt)));
}

}  // namespace
}  // namespace padless::serve::http
