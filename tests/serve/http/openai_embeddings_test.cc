// POST /v1/embeddings: OpenAI's request as TEI reads it (input as a string, strings, token ids or
// lists of them; encoding_format; dimensions; model; user), broken bodies with their statuses, the
// response's shape, base64 that decodes to the float32 values bit for bit, and TEI's error shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/openai_embeddings.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

OpenAiEmbeddingsParse ParseOpenAi(const std::string& body, size_t max_batch = 32) {
  return ParseOpenAiEmbeddingsRequest(body, PredictLimits{max_batch});
}

int OpenAiStatus(const std::string& body, size_t max_batch = 32) {
  const OpenAiEmbeddingsParse p = ParseOpenAi(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

// The little-endian float32 values a base64 string holds.
std::vector<float> DecodeFloat32Base64(const std::string& text) {
  std::string bytes;
  EXPECT_TRUE(absl::Base64Unescape(text, &bytes));
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> values(bytes.size() / 4);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) {
      bits |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i * 4 + b])) << (8 * b);
    }
    std::memcpy(&values[i], &bits, 4);
  }
  return values;
}

TEST(OpenAiEmbeddingsRequestTest, EveryInputShape) {
  OpenAiEmbeddingsParse p = ParseOpenAi(R"({"input": "hello", "model": "m"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  ASSERT_EQ(p.request.inputs.size(), 1u);
  EXPECT_EQ(p.request.inputs[0].text, "hello");
  EXPECT_FALSE(p.request.batch);
  p = ParseOpenAi(R"({"input": ["a", "b"]})");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.request.batch);
  EXPECT_EQ(p.request.inputs.size(), 2u);
  p = ParseOpenAi(R"({"input": [1, 2, 3]})");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.request.batch);
  EXPECT_EQ(*p.request.inputs[0].ids, (std::vector<uint32_t>{1, 2, 3}));
  p = ParseOpenAi(R"({"input": [[1, 2], [3], "text"]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);
  ASSERT_EQ(p.request.inputs.size(), 3u);
  EXPECT_EQ(*p.request.inputs[1].ids, (std::vector<uint32_t>{3}));
  EXPECT_EQ(p.request.inputs[2].text, "text");
}

TEST(OpenAiEmbeddingsRequestTest, OptionsAndDefaults) {
  OpenAiEmbeddingsParse p = ParseOpenAi(R"({"input": "x"})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.request.encoding_format, EmbeddingEncoding::kFloat);
  EXPECT_FALSE(p.request.model.has_value());
  EXPECT_FALSE(p.request.user.has_value());
  EXPECT_FALSE(p.request.dimensions.has_value());
  p = ParseOpenAi(
      R"({"input": "x", "model": "text-embedding-3-small", "user": "u-1",
          "encoding_format": "base64", "dimensions": 256, "truncate": "not a field here"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.encoding_format, EmbeddingEncoding::kBase64);
  EXPECT_EQ(p.request.model, "text-embedding-3-small");
  EXPECT_EQ(p.request.user, "u-1");
  EXPECT_EQ(p.request.dimensions, 256);
  p = ParseOpenAi(R"({"input": "x", "model": null, "user": null, "dimensions": null,
                      "encoding_format": "float"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_FALSE(p.request.model.has_value());
}

TEST(OpenAiEmbeddingsRequestTest, BrokenBodies) {
  EXPECT_EQ(OpenAiStatus(""), 400);
  EXPECT_EQ(OpenAiStatus("{\"input\": 'x'}"), 400);
  for (const char* body :
       {R"({})", R"({"inputs": "x"})", R"({"input": null})", R"({"input": 3})",
        R"({"input": {"text": "x"}})", R"({"input": [-1]})", R"({"input": [1, "a"]})",
        R"({"input": [[1.5]]})", R"({"input": [["a"]]})", R"({"input": "x", "model": 1})",
        R"({"input": "x", "user": {}})", R"({"input": "x", "encoding_format": "Float"})",
        R"({"input": "x", "encoding_format": "base85"})",
        R"({"input": "x", "encoding_format": null})", R"({"input": "x", "dimensions": 0})",
        R"({"input": "x", "dimensions": -8})", R"({"input": "x", "dimensions": 8.5})"}) {
    EXPECT_EQ(OpenAiStatus(body), 422) << body;
  }
  for (const char* body :
       {R"({"input": ""})", R"({"input": []})", R"({"input": [[]]})", R"({"input": ["a", ""]})"}) {
    const OpenAiEmbeddingsParse p = ParseOpenAi(body);
    ASSERT_FALSE(p.ok()) << body;
    EXPECT_EQ(p.error->status, 400) << body;  // TEI's Empty
    EXPECT_NE(p.error->message.find("`input` cannot"), std::string::npos) << p.error->message;
  }
  EXPECT_EQ(OpenAiStatus(R"({"input": ["a", "b", "c"]})", 2), 422);
  EXPECT_EQ(OpenAiStatus(R"({"input": [1, 2, 3]})", 2), 200);  // one input of three ids
}

TEST(OpenAiEmbeddingsResponseTest, FloatShape) {
  absl::StatusOr<std::string> body =
      OpenAiEmbeddingsResponseJson({{0.5f, -1.0f}, {0.25f, 0.125f}}, "all-MiniLM-L6-v2", 17,
                                   /*base64=*/false);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body,
            R"({"object":"list","data":[{"object":"embedding","embedding":[0.5,-1.0],"index":0},)"
            R"({"object":"embedding","embedding":[0.25,0.125],"index":1}],)"
            R"("model":"all-MiniLM-L6-v2","usage":{"prompt_tokens":17,"total_tokens":17}})");
  const json j = json::parse(*body);
  EXPECT_EQ(j["data"][1]["index"], 1);
}

TEST(OpenAiEmbeddingsResponseTest, Base64DecodesToTheFloatsBitExactly) {
  std::mt19937 rng(44);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> vectors(3, std::vector<float>(385));  // not a multiple of 3
  for (auto& v : vectors) {
    for (float& x : v) x = normal(rng);
  }
  vectors[0][0] = -0.0f;
  vectors[0][1] = std::numeric_limits<float>::denorm_min();
  vectors[0][2] = std::numeric_limits<float>::max();
  absl::StatusOr<std::string> body =
      OpenAiEmbeddingsResponseJson(vectors, "m\"odel", 3, /*base64=*/true);
  ASSERT_TRUE(body.ok()) << body.status();
  const json j = json::parse(*body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "m\"odel");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 3);
  ASSERT_EQ(j["data"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
    ASSERT_TRUE(j["data"][i]["embedding"].is_string());
    const std::vector<float> decoded =
        DecodeFloat32Base64(j["data"][i]["embedding"].get<std::string>());
    ASSERT_EQ(decoded.size(), vectors[i].size());
    EXPECT_EQ(std::memcmp(decoded.data(), vectors[i].data(), decoded.size() * 4), 0) << i;
  }
  // The bytes are little-endian whatever the host: 1.0f is 00 00 80 3f.
  const float one = 1.0f;
  EXPECT_EQ(Float32Base64(&one, 1), "AACAPw==");
  EXPECT_EQ(Float32Base64(nullptr, 0), "");
}

TEST(OpenAiEmbeddingsResponseTest, NonFiniteIsABackendError) {
  EXPECT_FALSE(OpenAiEmbeddingsResponseJson({{std::nanf("")}}, "m", 1, false).ok());
  EXPECT_FALSE(OpenAiEmbeddingsResponseJson({{1.0f}, {INFINITY}}, "m", 1, true).ok());
}

TEST(OpenAiErrorTest, TeiOpenAiCompatShape) {
  const OpenAiEmbeddingsParse p = ParseOpenAi(R"({"input": ["a", "b"]})", 1);
  ASSERT_FALSE(p.ok());
  const json j = json::parse(OpenAiErrorJson(*p.error));
  EXPECT_EQ(j["message"], "batch size 2 > maximum allowed batch size 1");
  EXPECT_EQ(j["code"], 422);
  EXPECT_EQ(j["type"], "Validation");
  EXPECT_EQ(j.size(), 3u);
  const json overloaded = json::parse(OpenAiErrorJson({429, ErrorType::kOverloaded, "full \xff"}));
  EXPECT_EQ(overloaded["type"], "Overloaded");
  EXPECT_EQ(overloaded["code"], 429);
}

}  // namespace
}  // namespace padless::serve::http
