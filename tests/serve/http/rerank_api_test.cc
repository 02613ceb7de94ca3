// POST /rerank: TEI's RerankRequest fields and defaults, broken bodies with their statuses, and
// the response: sorted by score, highest first, equal scores in index order, "text" only when
// asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "padless/serve/http/rerank_api.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

RerankParse ParseRerank(const std::string& body, size_t max_batch = 32) {
  return ParseRerankRequest(body, PredictLimits{max_batch});
}

int RerankStatus(const std::string& body, size_t max_batch = 32) {
  const RerankParse p = ParseRerank(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

TEST(RerankRequestTest, FieldsAndDefaults) {
  RerankParse p = ParseRerank(R"({"query": "What is Deep Learning?", "texts": ["DL is", "no"]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.query, "What is Deep Learning?");
  EXPECT_EQ(p.request.texts, (std::vector<std::string>{"DL is", "no"}));
  EXPECT_FALSE(p.request.truncate.has_value());
  EXPECT_FALSE(p.request.truncation_direction.has_value());
  EXPECT_FALSE(p.request.raw_scores);
  EXPECT_FALSE(p.request.return_text);
  p = ParseRerank(R"({"query": "q", "texts": ["t"], "truncate": false,
                      "truncation_direction": "Left", "raw_scores": true, "return_text": true,
                      "extra": null})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.truncate, false);
  EXPECT_EQ(p.request.truncation_direction, TruncationDirection::kLeft);
  EXPECT_TRUE(p.request.raw_scores);
  EXPECT_TRUE(p.request.return_text);
}

TEST(RerankRequestTest, BrokenBodies) {
  EXPECT_EQ(RerankStatus(""), 400);
  EXPECT_EQ(RerankStatus("{query: 1}"), 400);
  EXPECT_EQ(RerankStatus("{\"query\": \"\xff\", \"texts\": [\"a\"]}"), 400);
  for (const char* body :
       {R"([])", R"({"texts": ["a"]})", R"({"query": "q"})", R"({"query": 1, "texts": ["a"]})",
        R"({"query": ["q"], "texts": ["a"]})", R"({"query": "q", "texts": "a"})",
        R"({"query": "q", "texts": [1]})", R"({"query": "q", "texts": [["a"]]})",
        R"({"query": "q", "texts": null})", R"({"query": null, "texts": ["a"]})",
        R"({"query": "q", "texts": ["a"], "raw_scores": null})",
        R"({"query": "q", "texts": ["a"], "return_text": 1})",
        R"({"query": "q", "texts": ["a"], "truncate": "no"})",
        R"({"query": "q", "texts": ["a"], "truncation_direction": "Up"})"}) {
    EXPECT_EQ(RerankStatus(body), 422) << body;
  }
}

TEST(RerankRequestTest, EmptyTextsAndBatchLimit) {
  RerankParse p = ParseRerank(R"({"query": "q", "texts": []})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->type, ErrorType::kEmpty);
  EXPECT_EQ(p.error->message, "`texts` cannot be empty");  // TEI's message
  p = ParseRerank(R"({"query": "", "texts": ["a"]})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->message, "`query` cannot be empty");
  p = ParseRerank(R"({"query": "q", "texts": ["a", ""]})");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_NE(p.error->message.find("element 1 is empty"), std::string::npos) << p.error->message;
  EXPECT_EQ(RerankStatus(R"({"query": "q", "texts": ["a", "b", "c"]})", 2), 422);
  EXPECT_EQ(RerankStatus(R"({"query": "", "texts": ["a", "b", "c"]})", 2), 422);  // TEI's order
  EXPECT_EQ(RerankStatus(R"({"query": "q", "texts": ["a", "b"]})", 2), 200);
}

TEST(RerankResponseTest, SortedByScoreHighestFirst) {
  RerankRequest request;
  request.texts = {"zero", "one", "two", "three"};
  absl::StatusOr<std::string> body = RerankResponseJson({0.1f, 0.9f, -2.0f, 0.5f}, request);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, R"([{"index":1,"score":0.9},{"index":3,"score":0.5},{"index":0,"score":0.1},)"
                   R"({"index":2,"score":-2.0}])");
  request.return_text = true;
  body = RerankResponseJson({0.1f, 0.9f, -2.0f, 0.5f}, request);
  ASSERT_TRUE(body.ok());
  const json j = json::parse(*body);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["index"], 1);
  EXPECT_EQ(j[0]["text"], "one");
  EXPECT_EQ(j[3]["text"], "two");
  EXPECT_FLOAT_EQ(j[3]["score"].get<float>(), -2.0f);
}

TEST(RerankResponseTest, EqualScoresKeepIndexOrder) {
  RerankRequest request;
  request.texts = {"a", "b", "c", "d", "e"};
  absl::StatusOr<std::string> body = RerankResponseJson({0.5f, 0.7f, 0.5f, 0.7f, 0.5f}, request);
  ASSERT_TRUE(body.ok());
  const json j = json::parse(*body);
  std::vector<int> order;
  for (const json& rank : j) order.push_back(rank["index"].get<int>());
  EXPECT_EQ(order, (std::vector<int>{1, 3, 0, 2, 4}));
}

TEST(RerankResponseTest, TextsAreEscaped) {
  RerankRequest request;
  request.texts = {"a \"quoted\"\n\\ text \xc3\xa9"};
  request.return_text = true;
  absl::StatusOr<std::string> body = RerankResponseJson({0.25f}, request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(json::parse(*body)[0]["text"], request.texts[0]);
}

TEST(RerankResponseTest, NanInfinityAndWrongCountAreBackendErrors) {
  RerankRequest request;
  request.texts = {"a", "b"};
  absl::StatusOr<std::string> body = RerankResponseJson({0.5f, std::nanf("")}, request);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().message(), "score is NaN");  // TEI's message
  EXPECT_FALSE(RerankResponseJson({0.5f, INFINITY}, request).ok());
  EXPECT_FALSE(RerankResponseJson({0.5f}, request).ok());
  EXPECT_EQ(FromEngineStatus(body.status()).status, 424);
}

}  // namespace
}  // namespace padless::serve::http
