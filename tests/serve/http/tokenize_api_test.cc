// POST /tokenize and POST /decode: TEI's TokenizeRequest and DecodeRequest, their defaults, broken
// bodies with their statuses, and the responses' shapes (always a list per input).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "padless/serve/http/decode_api.h"
#include "padless/serve/http/tokenize_api.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

TokenizeParse ParseTokenize(const std::string& body, size_t max_batch = 32) {
  return ParseTokenizeRequest(body, PredictLimits{max_batch});
}

int TokenizeStatus(const std::string& body, size_t max_batch = 32) {
  const TokenizeParse p = ParseTokenize(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

DecodeParse ParseDecode(const std::string& body, size_t max_batch = 32) {
  return ParseDecodeRequest(body, PredictLimits{max_batch});
}

int DecodeStatus(const std::string& body, size_t max_batch = 32) {
  const DecodeParse p = ParseDecode(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

TEST(TokenizeRequestTest, FieldsAndDefaults) {
  TokenizeParse p = ParseTokenize(R"({"inputs": "hello world"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.inputs, (std::vector<std::string>{"hello world"}));
  EXPECT_FALSE(p.request.batch);
  EXPECT_TRUE(p.request.add_special_tokens);  // TEI's default
  EXPECT_FALSE(p.request.prompt_name.has_value());
  p = ParseTokenize(
      R"({"inputs": ["a", "b c"], "add_special_tokens": false, "prompt_name": "query"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);
  EXPECT_EQ(p.request.inputs, (std::vector<std::string>{"a", "b c"}));
  EXPECT_FALSE(p.request.add_special_tokens);
  EXPECT_EQ(p.request.prompt_name, "query");
}

TEST(TokenizeRequestTest, BrokenBodies) {
  EXPECT_EQ(TokenizeStatus(""), 400);
  EXPECT_EQ(TokenizeStatus("[[["), 400);
  for (const char* body :
       {R"({})", R"({"inputs": 1})", R"({"inputs": null})", R"({"inputs": [1, 2]})",
        R"({"inputs": [["a"]]})", R"({"inputs": "a", "add_special_tokens": null})",
        R"({"inputs": "a", "add_special_tokens": "true"})",
        R"({"inputs": "a", "prompt_name": []})"}) {
    EXPECT_EQ(TokenizeStatus(body), 422) << body;
  }
  TokenizeParse p = ParseTokenize(R"({"inputs": []})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->message, "`inputs` cannot be empty");  // TEI's message
  EXPECT_EQ(TokenizeStatus(R"({"inputs": ""})"), 400);
  p = ParseTokenize(R"({"inputs": ["a", ""]})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_NE(p.error->message.find("batch element 1"), std::string::npos) << p.error->message;
  EXPECT_EQ(TokenizeStatus(R"({"inputs": ["a", "b", "c"]})", 2), 422);
  EXPECT_EQ(TokenizeStatus(R"({"inputs": ["a", "b"]})", 2), 200);
}

TEST(TokenizeResponseTest, TeiSimpleTokens) {
  std::vector<std::vector<TokenPiece>> tokens(2);
  tokens[0] = {{101, "[CLS]", true, std::nullopt, std::nullopt},
               {7592, "hello", false, 0, 5},
               {102, "[SEP]", true, std::nullopt, std::nullopt}};
  tokens[1] = {{1, "\"q\"\xff", false, 3, 7}};
  const std::string body = TokenizeResponseJson(tokens);
  const std::string prefix =
      R"([[{"id":101,"text":"[CLS]","special":true,"start":null,"stop":null},)"
      R"({"id":7592,"text":"hello","special":false,"start":0,"stop":5},)";
  EXPECT_EQ(body.substr(0, prefix.size()), prefix);
  const json j = json::parse(body);
  ASSERT_EQ(j.size(), 2u);
  ASSERT_EQ(j[0].size(), 3u);
  EXPECT_EQ(j[0][2]["id"], 102);
  EXPECT_TRUE(j[0][2]["start"].is_null());
  EXPECT_EQ(j[1][0]["text"], "\"q\"\xef\xbf\xbd");  // not UTF-8: U+FFFD
  EXPECT_EQ(j[1][0]["stop"], 7);
  EXPECT_EQ(TokenizeResponseJson({{}}), "[[]]");
}

TEST(DecodeRequestTest, SingleAndBatch) {
  DecodeParse p = ParseDecode(R"({"ids": [101, 7592, 102]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_FALSE(p.request.batch);
  ASSERT_EQ(p.request.ids.size(), 1u);
  EXPECT_EQ(p.request.ids[0], (std::vector<uint32_t>{101, 7592, 102}));
  EXPECT_TRUE(p.request.skip_special_tokens);  // TEI's default
  p = ParseDecode(R"({"ids": [[1, 2], [4294967295]], "skip_special_tokens": false})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);
  ASSERT_EQ(p.request.ids.size(), 2u);
  EXPECT_EQ(p.request.ids[1], (std::vector<uint32_t>{4294967295u}));
  EXPECT_FALSE(p.request.skip_special_tokens);
}

TEST(DecodeRequestTest, BrokenBodies) {
  EXPECT_EQ(DecodeStatus(""), 400);
  EXPECT_EQ(DecodeStatus("{\"ids\": [1,]}"), 400);
  for (const char* body : {R"({})", R"({"ids": 5})", R"({"ids": "1 2"})", R"({"ids": [-1]})",
                           R"({"ids": [4294967296]})", R"({"ids": [1.5]})", R"({"ids": [1, [2]]})",
                           R"({"ids": [[1], 2]})", R"({"ids": [[[1]]]})",
                           R"({"ids": [1], "skip_special_tokens": null})",
                           R"({"ids": [1], "skip_special_tokens": 0})"}) {
    EXPECT_EQ(DecodeStatus(body), 422) << body;
  }
  // As in TEI, [] is one empty list of ids, and [[]] a batch holding one.
  DecodeParse p = ParseDecode(R"({"ids": []})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->message, "`input_ids` cannot be empty");  // TEI's message
  p = ParseDecode(R"({"ids": [[1], []]})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_NE(p.error->message.find("batch element 1"), std::string::npos) << p.error->message;
  EXPECT_EQ(DecodeStatus(R"({"ids": [[1], [2], [3]]})", 2), 422);
  EXPECT_EQ(DecodeStatus(R"({"ids": [1, 2, 3]})", 1), 200);  // one list, however long
}

TEST(DecodeResponseTest, AListOfTexts) {
  EXPECT_EQ(DecodeResponseJson({"hello", "a \"b\""}), R"(["hello","a \"b\""])");
  EXPECT_EQ(json::parse(DecodeResponseJson({"cut \xe2\x82"}))[0], "cut \xef\xbf\xbd");
  EXPECT_EQ(DecodeResponseJson({}), "[]");
}

}  // namespace
}  // namespace padless::serve::http
