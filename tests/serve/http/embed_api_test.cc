// POST /embed and /embed_all: every field of TEI's EmbedRequest and its defaults, token-id inputs,
// broken bodies with TEI's statuses (as padless answers them: api_error.h), and the responses'
// floats, which must read back bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "padless/serve/http/embed_request.h"
#include "padless/serve/http/embed_response.h"
#include "padless/serve/http/float_json.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

EmbedParse ParseEmbed(const std::string& body, size_t max_batch = 32) {
  return ParseEmbedRequest(body, PredictLimits{max_batch});
}

int EmbedStatus(const std::string& body, size_t max_batch = 32) {
  const EmbedParse p = ParseEmbed(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

int EmbedAllStatus(const std::string& body, size_t max_batch = 32) {
  const EmbedParse p = ParseEmbedAllRequest(body, PredictLimits{max_batch});
  return p.ok() ? 200 : p.error->status;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(EmbedRequestTest, SingleTextAndDefaults) {
  const EmbedParse p = ParseEmbed(R"({"inputs": "What is Deep Learning?"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  ASSERT_EQ(p.request.inputs.size(), 1u);
  EXPECT_EQ(p.request.inputs[0].text, "What is Deep Learning?");
  EXPECT_FALSE(p.request.inputs[0].ids.has_value());
  EXPECT_FALSE(p.request.batch);
  EXPECT_TRUE(p.request.normalize);  // TEI's default_normalize
  EXPECT_FALSE(p.request.truncate.has_value());
  EXPECT_FALSE(p.request.truncation_direction.has_value());
  EXPECT_FALSE(p.request.prompt_name.has_value());
  EXPECT_FALSE(p.request.dimensions.has_value());
}

TEST(EmbedRequestTest, EveryField) {
  const EmbedParse p = ParseEmbed(
      R"({"inputs": ["a", "b"], "normalize": false, "truncate": true,
          "truncation_direction": "Left", "prompt_name": "query", "dimensions": 64})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);  // a list of two strings is a batch here, not a pair
  ASSERT_EQ(p.request.inputs.size(), 2u);
  EXPECT_EQ(p.request.inputs[1].text, "b");
  EXPECT_FALSE(p.request.normalize);
  EXPECT_EQ(p.request.truncate, true);
  EXPECT_EQ(p.request.truncation_direction, TruncationDirection::kLeft);
  EXPECT_EQ(p.request.prompt_name, "query");
  EXPECT_EQ(p.request.dimensions, 64);
  const EmbedParse q = ParseEmbed(
      R"({"inputs": "x", "truncate": null, "truncation_direction": "right", "prompt_name": null,
          "dimensions": null, "normalize": true, "unknown": [1, {"a": 2}]})");
  ASSERT_TRUE(q.ok()) << q.error->message;
  EXPECT_FALSE(q.request.truncate.has_value());
  EXPECT_EQ(q.request.truncation_direction, TruncationDirection::kRight);
  EXPECT_FALSE(q.request.prompt_name.has_value());
  EXPECT_FALSE(q.request.dimensions.has_value());
  EXPECT_EQ(
      ParseEmbed(R"({"inputs": "x", "truncation_direction": "left"})").request.truncation_direction,
      TruncationDirection::kLeft);
}

TEST(EmbedRequestTest, TokenIdInputs) {
  EmbedParse p = ParseEmbed(R"({"inputs": [101, 2023, 4294967295, 0]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_FALSE(p.request.batch);  // TEI's Input::Single(InputType::Ids)
  ASSERT_EQ(p.request.inputs.size(), 1u);
  ASSERT_TRUE(p.request.inputs[0].ids.has_value());
  EXPECT_EQ(*p.request.inputs[0].ids, (std::vector<uint32_t>{101, 2023, 4294967295u, 0}));
  p = ParseEmbed(R"({"inputs": [[101, 102], "text", [7]]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);
  ASSERT_EQ(p.request.inputs.size(), 3u);
  EXPECT_EQ(*p.request.inputs[0].ids, (std::vector<uint32_t>{101, 102}));
  EXPECT_EQ(p.request.inputs[1].text, "text");
  EXPECT_FALSE(p.request.inputs[1].ids.has_value());
  EXPECT_EQ(*p.request.inputs[2].ids, (std::vector<uint32_t>{7}));
  // Not u32: negative, too large, fractional, a string among ids.
  for (const char* body :
       {R"({"inputs": [-1]})", R"({"inputs": [4294967296]})", R"({"inputs": [1.5]})",
        R"({"inputs": [1.0]})", R"({"inputs": [1, "a"]})", R"({"inputs": [[1, -2]]})",
        R"({"inputs": [[1], [true]]})", R"({"inputs": [[[1]]]})"}) {
    EXPECT_EQ(EmbedStatus(body), 422) << body;
  }
}

TEST(EmbedRequestTest, NotJsonIs400) {
  for (const std::string& body :
       {std::string(""), std::string("inputs=x"), std::string(R"({"inputs": "x")"),
        std::string("\x00\x01", 2), std::string("{\"inputs\": \"caf\xe9\"}"),
        std::string(100, '[') + std::string(100, ']')}) {
    EXPECT_EQ(EmbedStatus(body), 400) << body;
    EXPECT_EQ(EmbedAllStatus(body), 400) << body;
  }
}

TEST(EmbedRequestTest, WrongShapeIs422) {
  for (const char* body : {R"([1])",
                           R"("x")",
                           R"(null)",
                           R"({})",
                           R"({"input": "x"})",
                           R"({"inputs": 5})",
                           R"({"inputs": null})",
                           R"({"inputs": {"a": "b"}})",
                           R"({"inputs": true})",
                           R"({"inputs": ["a", null]})",
                           R"({"inputs": [["a"]]})",
                           R"({"inputs": "x", "normalize": null})",
                           R"({"inputs": "x", "normalize": "yes"})",
                           R"({"inputs": "x", "truncate": 1})",
                           R"({"inputs": "x", "truncation_direction": "up"})",
                           R"({"inputs": "x", "truncation_direction": null})",
                           R"({"inputs": "x", "truncation_direction": "RIGHT"})",
                           R"({"inputs": "x", "prompt_name": 3})",
                           R"({"inputs": "x", "dimensions": 0})",
                           R"({"inputs": "x", "dimensions": -0})",
                           R"({"inputs": "x", "dimensions": -3})",
                           R"({"inputs": "x", "dimensions": 2.0})",
                           R"({"inputs": "x", "dimensions": "8"})",
                           R"({"inputs": "x", "dimensions": 18446744073709551615})"}) {
    EXPECT_EQ(EmbedStatus(body), 422) << body;
  }
  EXPECT_EQ(ParseEmbed(R"({"inputs": "x", "dimensions": 0})").error->message,
            "`dimensions` should be positive");  // TEI's message
  EXPECT_EQ(ParseEmbed(R"({"inputs": "x", "dimensions": 9223372036854775807})").request.dimensions,
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseEmbed(R"({})").error->message, "missing field `inputs`");
}

TEST(EmbedRequestTest, EmptyInputsAre400Empty) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"inputs": ""})", "`inputs` cannot be empty: the text is empty"},
      {R"({"inputs": []})", "`inputs` cannot be empty: the list of token ids is empty"},
      {R"({"inputs": ["a", ""]})", "the text of batch element 1 is empty"},
      {R"({"inputs": [[1], []]})", "the list of token ids of batch element 1 is empty"},
  };
  for (const auto& [body, message] : cases) {
    const EmbedParse p = ParseEmbed(body);
    ASSERT_FALSE(p.ok()) << body;
    EXPECT_EQ(p.error->status, 400) << body;
    EXPECT_EQ(p.error->type, ErrorType::kEmpty) << body;
    EXPECT_NE(p.error->message.find(message), std::string::npos)
        << body << ": " << p.error->message;
  }
  EXPECT_EQ(EmbedStatus(R"({"inputs": " "})"), 200);  // blank is not empty
}

TEST(EmbedRequestTest, BatchOverTheClientLimitIs422) {
  EXPECT_EQ(EmbedStatus(R"({"inputs": ["a", "b", "c"]})", 2), 422);
  EXPECT_EQ(EmbedStatus(R"({"inputs": ["a", "b"]})", 2), 200);
  EXPECT_EQ(EmbedAllStatus(R"({"inputs": [[1], [2], [3]]})", 2), 422);
  // A single list of ids is one input, however long.
  EXPECT_EQ(EmbedStatus(R"({"inputs": [1, 2, 3]})", 1), 200);
  EXPECT_EQ(ParseEmbed(R"({"inputs": ["a", "b", ""]})", 2).error->message,
            "batch size 3 > maximum allowed batch size 2");  // checked before empty texts
}

TEST(EmbedAllRequestTest, SharesTheFieldsButIgnoresNormalizeAndDimensions) {
  const EmbedParse p = ParseEmbedAllRequest(
      R"({"inputs": ["a", [5]], "truncate": false, "truncation_direction": "Left",
          "prompt_name": "passage", "normalize": "not read", "dimensions": -1})",
      PredictLimits{32});
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.inputs.size(), 2u);
  EXPECT_EQ(p.request.truncate, false);
  EXPECT_EQ(p.request.truncation_direction, TruncationDirection::kLeft);
  EXPECT_EQ(p.request.prompt_name, "passage");
  EXPECT_FALSE(p.request.dimensions.has_value());
  EXPECT_EQ(EmbedAllStatus(R"({"inputs": ""})"), 400);
  EXPECT_EQ(EmbedAllStatus(R"({"inputs": "x", "truncation_direction": 0})"), 422);
}

TEST(FloatJsonTest, ShortestFormThatReadsBackExactly) {
  const std::pair<float, const char*> cases[] = {
      {0.1f, "0.1"},     {1.0f, "1.0"},   {-0.0f, "-0.0"},  {0.0f, "0.0"},
      {100.0f, "100.0"}, {-2.5f, "-2.5"}, {1e-7f, "1e-07"}, {3.4028235e38f, "3.4028235e+38"},
  };
  for (const auto& [value, text] : cases) {
    std::string out = "poison";
    ASSERT_TRUE(AppendJsonFloat(value, &out));
    EXPECT_EQ(out, std::string("poison") + text);
  }
  std::string out = "x";
  EXPECT_FALSE(AppendJsonFloat(std::nanf(""), &out));
  EXPECT_FALSE(AppendJsonFloat(std::numeric_limits<float>::infinity(), &out));
  EXPECT_EQ(out, "x");
}

// Random bit patterns (every exponent, subnormals too): each written value is read back by a JSON
// reader (nlohmann, as a double, then narrowed) and by strtof to the same bits.
TEST(FloatJsonTest, RandomBitPatternsRoundTrip) {
  std::mt19937 rng(20261130);
  std::vector<float> values;
  while (values.size() < 20000) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isfinite(f)) values.push_back(f);
  }
  values.push_back(std::numeric_limits<float>::denorm_min());
  values.push_back(-std::numeric_limits<float>::min());
  std::string body;
  ASSERT_TRUE(AppendJsonFloatArray(values.data(), values.size(), &body));
  const json j = json::parse(body);
  ASSERT_EQ(j.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(j[i].is_number_float()) << i;  // never an integer, for Python's json too
    ASSERT_EQ(Bits(static_cast<float>(j[i].get<double>())), Bits(values[i])) << i;
  }
  size_t start = 1;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t end = body.find_first_of(",]", start);
    const std::string text = body.substr(start, end - start);
    ASSERT_EQ(Bits(std::strtof(text.c_str(), nullptr)), Bits(values[i])) << text;
    start = end + 1;
  }
}

TEST(FloatJsonTest, ArrayStopsAtNanAndLeavesTheOutputAlone) {
  const std::vector<float> v = {1.0f, std::nanf(""), 2.0f};
  std::string out = "[prefix]";
  EXPECT_FALSE(AppendJsonFloatArray(v.data(), v.size(), &out));
  EXPECT_EQ(out, "[prefix]");
  out.clear();
  EXPECT_TRUE(AppendJsonFloatArray(nullptr, 0, &out));
  EXPECT_EQ(out, "[]");
}

TEST(EmbedResponseTest, AlwaysAListOfVectors) {
  absl::StatusOr<std::string> body = EmbedResponseJson({{0.5f, -0.25f, 1.0f}});
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "[[0.5,-0.25,1.0]]");
  body = EmbedResponseJson({{0.1f}, {0.2f, 0.3f}});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body, "[[0.1],[0.2,0.3]]");
  EXPECT_EQ(*EmbedResponseJson({}), "[]");
  EXPECT_FALSE(EmbedResponseJson({{0.1f}, {std::nanf("")}}).ok());
  EXPECT_FALSE(EmbedResponseJson({{-std::numeric_limits<float>::infinity()}}).ok());
}

TEST(EmbedResponseTest, BigBodyReadsBackBitExactly) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<std::vector<float>> vectors(32, std::vector<float>(1024));
  for (auto& v : vectors) {
    for (float& x : v) x = normal(rng);
  }
  absl::StatusOr<std::string> body = EmbedResponseJson(vectors);
  ASSERT_TRUE(body.ok());
  const json j = json::parse(*body);
  ASSERT_EQ(j.size(), 32u);
  for (size_t i = 0; i < 32; ++i) {
    ASSERT_EQ(j[i].size(), 1024u);
    for (size_t k = 0; k < 1024; ++k) {
      ASSERT_EQ(Bits(static_cast<float>(j[i][k].get<double>())), Bits(vectors[i][k]));
    }
  }
}

TEST(EmbedAllResponseTest, OneMatrixPerInput) {
  absl::StatusOr<std::string> body =
      EmbedAllResponseJson({{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {0.5f, 0.25f}}, 2);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "[[[1.0,2.0],[3.0,4.0],[5.0,6.0]],[[0.5,0.25]]]");
  EXPECT_EQ(*EmbedAllResponseJson({{}}, 3), "[[]]");
  EXPECT_FALSE(EmbedAllResponseJson({{1.0f, 2.0f, 3.0f}}, 2).ok());  // not whole rows
  EXPECT_FALSE(EmbedAllResponseJson({{1.0f}}, 0).ok());
  EXPECT_FALSE(EmbedAllResponseJson({{1.0f, std::nanf("")}}, 2).ok());
}

}  // namespace
}  // namespace padless::serve::http
