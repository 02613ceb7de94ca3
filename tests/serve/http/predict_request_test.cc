// ParsePredictRequest: every shape of TEI's PredictRequest, and broken bodies (empty, binary,
// wrong types, huge batches, deep nesting, invalid UTF-8, empty texts) answered with the right
// status.
#include "padless/serve/http/predict_request.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace padless::serve::http {
namespace {

PredictParse Parse(const std::string& body, size_t max_batch = 32) {
  return ParsePredictRequest(body, PredictLimits{max_batch});
}

int StatusOf(const std::string& body, size_t max_batch = 32) {
  const PredictParse p = Parse(body, max_batch);
  return p.ok() ? 200 : p.error->status;
}

TEST(PredictRequestTest, SingleText) {
  const PredictParse p = Parse(R"({"inputs": "good film"})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  ASSERT_EQ(p.request.inputs.size(), 1u);
  EXPECT_EQ(p.request.inputs[0].text, "good film");
  EXPECT_FALSE(p.request.inputs[0].pair.has_value());
  EXPECT_FALSE(p.request.batch);
  EXPECT_FALSE(p.request.truncate.has_value());
  EXPECT_FALSE(p.request.raw_scores);
}

TEST(PredictRequestTest, PairAndListOfOneAreNotBatches) {
  PredictParse p = Parse(R"({"inputs": ["premise", "hypothesis"]})");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.request.batch);
  ASSERT_EQ(p.request.inputs.size(), 1u);
  EXPECT_EQ(p.request.inputs[0].text, "premise");
  EXPECT_EQ(p.request.inputs[0].pair, "hypothesis");
  p = Parse(R"({"inputs": ["alone"]})");  // TEI: a single, answered with a flat list
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.request.batch);
  EXPECT_FALSE(p.request.inputs[0].pair.has_value());
}

TEST(PredictRequestTest, BatchOfSinglesAndPairs) {
  const PredictParse p =
      Parse(R"({"inputs": [["a"], ["b", "c"], ["d"]], "raw_scores": true, "truncate": false})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_TRUE(p.request.batch);
  ASSERT_EQ(p.request.inputs.size(), 3u);
  EXPECT_EQ(p.request.inputs[1].text, "b");
  EXPECT_EQ(p.request.inputs[1].pair, "c");
  EXPECT_FALSE(p.request.inputs[2].pair.has_value());
  EXPECT_TRUE(p.request.raw_scores);
  EXPECT_EQ(p.request.truncate, false);
}

TEST(PredictRequestTest, OptionsFollowTei) {
  EXPECT_EQ(Parse(R"({"inputs": "x", "truncate": null})").request.truncate, std::nullopt);
  EXPECT_EQ(Parse(R"({"inputs": "x", "truncate": true})").request.truncate, true);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncation_direction": "Right"})"), 200);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncation_direction": "right"})"), 200);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncation_direction": "Left"})"), 422);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncation_direction": "up"})"), 422);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncation_direction": 1})"), 422);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "raw_scores": null})"), 422);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "raw_scores": "yes"})"), 422);
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "truncate": 1})"), 422);
  // Unknown keys are ignored, as serde does (HF clients send "parameters").
  EXPECT_EQ(StatusOf(R"({"inputs": "x", "parameters": {"top_k": 2}})"), 200);
}

TEST(PredictRequestTest, NotJsonIs400) {
  EXPECT_EQ(StatusOf(""), 400);
  EXPECT_EQ(StatusOf("inputs=hello"), 400);
  EXPECT_EQ(StatusOf(R"({"inputs": "x")"), 400);
  EXPECT_EQ(StatusOf(std::string("\x00\x01\x02\xff\xfe", 5)), 400);
  EXPECT_EQ(StatusOf("{\"inputs\": \"caf\xe9\"}"), 400);       // Latin-1, not UTF-8
  EXPECT_EQ(StatusOf("{\"inputs\": \"\xc3\x28\"}"), 400);      // a broken two-byte sequence
  EXPECT_EQ(StatusOf("{\"inputs\": \"\xed\xa0\x80\"}"), 400);  // a UTF-16 surrogate
  const PredictParse p = Parse("not json");
  EXPECT_EQ(p.error->type, ErrorType::kValidation);
}

TEST(PredictRequestTest, WrongShapeIs422) {
  for (const char* body :
       {R"([1, 2])", R"("text")", R"(null)", R"({})", R"({"input": "x"})", R"({"inputs": 5})",
        R"({"inputs": null})", R"({"inputs": []})", R"({"inputs": {"text": "x"}})",
        R"({"inputs": ["a", "b", "c"]})", R"({"inputs": ["a", 1]})",
        R"({"inputs": [["a", "b", "c"]]})", R"({"inputs": [[]]})", R"({"inputs": [["a"], "b"]})",
        R"({"inputs": [["a"], [1]]})", R"({"inputs": [[["a"]]]})"}) {
    EXPECT_EQ(StatusOf(body), 422) << body;
  }
}

TEST(PredictRequestTest, EscapesParse) {
  const PredictParse p = Parse(R"({"inputs": [[" "], ["\u00e9\n\"q\"", "\u0000"]]})");
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.inputs[0].text, " ");  // blank, not empty: TEI takes it too
  EXPECT_EQ(p.request.inputs[1].text, "\xc3\xa9\n\"q\"");
  EXPECT_EQ(p.request.inputs[1].pair, std::string(1, '\0'));
}

// "" alone, in a pair (either side) or anywhere in a batch is refused with TEI's 400 Empty error,
// naming where it is.
TEST(PredictRequestTest, EmptyTextIs400Empty) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"inputs": ""})", "`inputs` cannot be empty: the text is empty"},
      {R"({"inputs": [""]})", "`inputs` cannot be empty: the text is empty"},
      {R"({"inputs": ["", "hypothesis"]})", "the pair's first text is empty"},
      {R"({"inputs": ["premise", ""]})", "the pair's second text is empty"},
      {R"({"inputs": [[""]]})", "the text of batch element 0 is empty"},
      {R"({"inputs": [["a"], ["b", "c"], [""]]})", "the text of batch element 2 is empty"},
      {R"({"inputs": [["a"], ["b", ""]]})", "the pair's second text of batch element 1"},
      {R"({"inputs": [["a"], ["", "c"]]})", "the pair's first text of batch element 1"},
      {R"({"inputs": [["", ""]]})", "the pair's first text of batch element 0"},
  };
  for (const auto& [body, message] : cases) {
    const PredictParse p = Parse(body);
    ASSERT_FALSE(p.ok()) << body;
    EXPECT_EQ(p.error->status, 400) << body;
    EXPECT_EQ(p.error->type, ErrorType::kEmpty) << body;
    EXPECT_NE(p.error->message.find(message), std::string::npos)
        << body << ": " << p.error->message;
  }
  // The batch size is checked first, as TEI does; the options too (they are part of the shape).
  EXPECT_EQ(StatusOf(R"({"inputs": [["a"], ["b"], [""]]})", 2), 422);
  EXPECT_EQ(Parse(R"({"inputs": "", "truncate": 1})").error->message,
            "`truncate` must be a boolean or null");
  EXPECT_EQ(StatusOf(R"({"inputs": [["a"], [" "], ["\u0000"]]})"), 200);
}

TEST(PredictRequestTest, BatchOverTheClientLimitIs422) {
  std::string body = R"({"inputs": [)";
  for (int i = 0; i < 33; ++i) body += std::string(i ? "," : "") + R"(["t"])";
  body += "]}";
  EXPECT_EQ(StatusOf(body, 32), 422);  // TEI's Validation since v1.9.0 (413 before)
  EXPECT_EQ(StatusOf(body, 33), 200);
  const PredictParse p = Parse(body, 32);
  EXPECT_NE(p.error->message.find("batch size 33 > maximum allowed batch size 32"),
            std::string::npos);
}

TEST(PredictRequestTest, DeepNestingIsRejectedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(StatusOf(deep), 400);
  EXPECT_EQ(StatusOf(R"({"inputs": )" + deep + "}"), 400);
  // Brackets inside strings do not count.
  EXPECT_EQ(StatusOf(R"({"inputs": ")" + std::string(1000, '[') + R"("})"), 200);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [[["\"["]]]})", 16), 4);
  EXPECT_EQ(JsonNestingDepth("[[[[", 2), 3);  // stops counting past the limit
}

TEST(PredictRequestTest, LargeBatchParses) {
  std::string body = R"({"inputs": [)";
  for (int i = 0; i < 10000; ++i) body += std::string(i ? "," : "") + R"(["text", "pair"])";
  body += "]}";
  const PredictParse p = Parse(body, 10000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.request.inputs.size(), 10000u);
}

}  // namespace
}  // namespace padless::serve::http
