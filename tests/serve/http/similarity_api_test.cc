// POST /similarity: TEI's SimilarityRequest (inputs.source_sentence, inputs.sentences, the options
// under "parameters"), broken bodies with their statuses, the cosines and the response.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "padless/serve/http/similarity_api.h"

namespace padless::serve::http {
namespace {

SimilarityParse ParseSimilarity(const std::string& body, size_t max_batch = 32) {
  return ParseSimilarityRequest(body, PredictLimits{max_batch});
}

int SimilarityStatus(const std::string& body, size_t max_batch = 32) {
  const SimilarityParse p = ParseSimilarity(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

TEST(SimilarityRequestTest, FieldsAndDefaults) {
  SimilarityParse p = ParseSimilarity(
      R"({"inputs": {"source_sentence": "What is DL?", "sentences": ["What is ML?", "Pizza"]}})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.source_sentence, "What is DL?");
  EXPECT_EQ(p.request.sentences, (std::vector<std::string>{"What is ML?", "Pizza"}));
  EXPECT_FALSE(p.request.truncate.has_value());
  EXPECT_FALSE(p.request.truncation_direction.has_value());
  EXPECT_FALSE(p.request.prompt_name.has_value());
  p = ParseSimilarity(
      R"({"inputs": {"source_sentence": "s", "sentences": ["a"]},
          "parameters": {"truncate": true, "truncation_direction": "Left",
                         "prompt_name": "query", "other": 1}})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.truncate, true);
  EXPECT_EQ(p.request.truncation_direction, TruncationDirection::kLeft);
  EXPECT_EQ(p.request.prompt_name, "query");
  EXPECT_EQ(SimilarityStatus(
                R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": null})"),
            200);
  // TEI reads the options under "parameters" only: at the top level they are unknown keys.
  p = ParseSimilarity(
      R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "truncate": "ignored"})");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.request.truncate.has_value());
}

TEST(SimilarityRequestTest, BrokenBodies) {
  EXPECT_EQ(SimilarityStatus(""), 400);
  EXPECT_EQ(SimilarityStatus("{\"inputs\": {"), 400);
  for (const char* body : {
           R"({})",
           R"({"inputs": "text"})",
           R"({"inputs": ["s", "a"]})",
           R"({"inputs": {"sentences": ["a"]}})",
           R"({"inputs": {"source_sentence": "s"}})",
           R"({"inputs": {"source_sentence": 1, "sentences": ["a"]}})",
           R"({"inputs": {"source_sentence": "s", "sentences": "a"}})",
           R"({"inputs": {"source_sentence": "s", "sentences": [1]}})",
           R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": []})",
           R"({"inputs": {"source_sentence": "s", "sentences": ["a"]},
               "parameters": {"truncate": 1}})",
           R"({"inputs": {"source_sentence": "s", "sentences": ["a"]},
               "parameters": {"truncation_direction": null}})",
           R"({"inputs": {"source_sentence": "s", "sentences": ["a"]},
               "parameters": {"prompt_name": false}})",
       }) {
    EXPECT_EQ(SimilarityStatus(body), 422) << body;
  }
}

TEST(SimilarityRequestTest, EmptySentencesAndBatchLimit) {
  SimilarityParse p = ParseSimilarity(R"({"inputs": {"source_sentence": "s", "sentences": []}})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->message, "`inputs.sentences` cannot be empty");  // TEI's message
  EXPECT_EQ(SimilarityStatus(R"({"inputs": {"source_sentence": "", "sentences": ["a"]}})"), 400);
  p = ParseSimilarity(R"({"inputs": {"source_sentence": "s", "sentences": ["a", ""]}})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_NE(p.error->message.find("element 1"), std::string::npos) << p.error->message;
  // The source sentence counts toward max_client_batch_size, as TEI counts it.
  p = ParseSimilarity(R"({"inputs": {"source_sentence": "s", "sentences": ["a", "b"]}})", 2);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 422);
  EXPECT_EQ(p.error->message, "batch size 3 > maximum allowed batch size 2");
  EXPECT_EQ(SimilarityStatus(R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}})", 2),
            200);
}

TEST(CosineSimilaritiesTest, CosinesAndZeroVectors) {
  absl::StatusOr<std::vector<float>> s =
      CosineSimilarities({1.0f, 0.0f}, {{2.0f, 0.0f}, {0.0f, 3.0f}, {-1.0f, 0.0f}, {1.0f, 1.0f}});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_FLOAT_EQ((*s)[0], 1.0f);
  EXPECT_FLOAT_EQ((*s)[1], 0.0f);
  EXPECT_FLOAT_EQ((*s)[2], -1.0f);
  EXPECT_FLOAT_EQ((*s)[3], static_cast<float>(1 / std::sqrt(2.0)));
  // simsimd's conventions, which TEI's answer follows: two zero vectors 1, one zero vector 0.
  s = CosineSimilarities({0.0f, 0.0f}, {{0.0f, 0.0f}, {1.0f, 2.0f}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0], 1.0f);
  EXPECT_EQ((*s)[1], 0.0f);
  EXPECT_FALSE(CosineSimilarities({1.0f}, {{1.0f, 2.0f}}).ok());
  EXPECT_FALSE(CosineSimilarities({1.0f}, {{std::nanf("")}}).ok());
  EXPECT_FALSE(CosineSimilarities({INFINITY}, {{1.0f}}).ok());
}

TEST(SimilarityResponseTest, AFlatListOfFloats) {
  absl::StatusOr<std::string> body = SimilarityResponseJson({0.75f, -0.5f, 1.0f});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body, "[0.75,-0.5,1.0]");
  EXPECT_FALSE(SimilarityResponseJson({std::nanf("")}).ok());
}

}  // namespace
}  // namespace padless::serve::http
