// IsJsonContentType and CheckJsonContentType: the Content-Types TEI (axum's JSON extractor) reads
// as JSON are read, every other one, and a missing one, is refused with 415 and TEI's error shape.
#include "padless/serve/http/json_content_type.h"

#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"

namespace padless::serve::http {
namespace {

TEST(JsonContentTypeTest, JsonTypesAreAccepted) {
  for (const char* type :
       {"application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8",
        "Application/JSON", "APPLICATION/JSON; Charset=utf-8", "  application/json  ",
        "application/json ; charset=utf-8", "application/vnd.api+json", "application/ld+json",
        "application/cloudevents+JSON; charset=utf-8"}) {
    EXPECT_TRUE(IsJsonContentType(type)) << type;
    EXPECT_FALSE(CheckJsonContentType(absl::string_view(type)).has_value()) << type;
  }
}

TEST(JsonContentTypeTest, OtherTypesAreRefused) {
  for (const char* type :
       {"text/plain", "text/plain; charset=utf-8", "text/json", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", "application/octet-stream", "application/jsonl",
        "application/json-seq", "application/xjson", "application/+json", "*/*"}) {
    EXPECT_FALSE(IsJsonContentType(type)) << type;
    EXPECT_EQ(CheckJsonContentType(absl::string_view(type))->status, 415) << type;
  }
}

TEST(JsonContentTypeTest, MalformedTypesAreRefused) {
  for (const char* type :
       {"", " ", "application", "application/", "/json", ";application/json", "application /json",
        "application/ json", "application/js on", "application/json/x", "application/json\xff",
        "text/plain, application/json"}) {
    EXPECT_FALSE(IsJsonContentType(type)) << type;
  }
}

TEST(JsonContentTypeTest, RefusalIs415WithTeiShape) {
  std::optional<ApiError> e = CheckJsonContentType(absl::string_view("text/plain"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 415);
  EXPECT_EQ(e->type, ErrorType::kValidation);
  const nlohmann::json j = nlohmann::json::parse(e->ToJson());
  EXPECT_EQ(j["error_type"], "Validation");
  EXPECT_EQ(j["error"],
            "Expected request with `Content-Type: application/json` (got `text/plain`)");

  // No header: refused as TEI refuses it.
  e = CheckJsonContentType(std::nullopt);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 415);
  EXPECT_NE(e->message.find("(no Content-Type)"), std::string::npos) << e->message;

  // A long header is quoted cut short; bytes that are not UTF-8 still serialize.
  e = CheckJsonContentType(absl::string_view(std::string(1000, 'x')));
  ASSERT_TRUE(e.has_value());
  EXPECT_LT(e->message.size(), 200u) << e->message;
  EXPECT_NE(e->message.find("...`)"), std::string::npos) << e->message;
  const std::string latin1 = "text/caf\xe9";
  e = CheckJsonContentType(absl::string_view(latin1));
  ASSERT_TRUE(e.has_value());
  EXPECT_NO_THROW(nlohmann::json::parse(e->ToJson()));
}

}  // namespace
}  // namespace padless::serve::http
