// The pure parts of `padless serve` beside the parser: TEI's response and error bodies, /info,
// the Prometheus rendering, the log levels and lines, and the OpenAPI document.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "nlohmann/json.hpp"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/histogram.h"
#include "padless/serve/http/metrics.h"
#include "padless/serve/http/openapi.h"
#include "padless/serve/http/predict_response.h"
#include "padless/serve/http/server_info.h"
#include "padless/serve/http/server_log.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

TEST(PredictResponseTest, LabelsSortedByScoreHighestFirst) {
  absl::StatusOr<std::string> body =
      PredictResponseJson({{0.2f, 0.7f, 0.1f}}, {"neg", "pos", "neutral"}, /*batch=*/false);
  ASSERT_TRUE(body.ok()) << body.status();
  const json j = json::parse(*body);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["label"], "pos");
  EXPECT_EQ(j[1]["label"], "neg");
  EXPECT_EQ(j[2]["label"], "neutral");
  EXPECT_FLOAT_EQ(j[0]["score"].get<float>(), 0.7f);
}

TEST(PredictResponseTest, BatchIsAListOfLists) {
  absl::StatusOr<std::string> body =
      PredictResponseJson({{0.9f, 0.1f}, {0.3f, 0.7f}}, {"a", "b"}, /*batch=*/true);
  ASSERT_TRUE(body.ok());
  const json j = json::parse(*body);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0][0]["label"], "a");
  EXPECT_EQ(j[1][0]["label"], "b");
}

TEST(PredictResponseTest, NanAndWrongCountAreBackendErrors) {
  EXPECT_FALSE(PredictResponseJson({{NAN, 0.5f}}, {"a", "b"}, false).ok());
  EXPECT_FALSE(PredictResponseJson({{0.5f}}, {"a", "b"}, false).ok());
  EXPECT_EQ(FromEngineStatus(absl::InternalError("score is NaN")).status, 424);
}

TEST(ApiErrorTest, TeiShapeAndStatuses) {
  const json j = json::parse(TooLarge("big").ToJson());
  EXPECT_EQ(j["error"], "big");
  EXPECT_EQ(j["error_type"], "Validation");
  EXPECT_EQ(FromEngineStatus(absl::ResourceExhaustedError("full")).status, 429);
  EXPECT_EQ(json::parse(FromEngineStatus(absl::ResourceExhaustedError("x")).ToJson())["error_type"],
            "Overloaded");
  EXPECT_EQ(FromEngineStatus(absl::UnavailableError("down")).status, 503);
  EXPECT_EQ(FromEngineStatus(absl::InvalidArgumentError("too long")).status, 422);  // TEI >= 1.9
  EXPECT_EQ(MalformedBody("x").status, 400);
  EXPECT_EQ(WrongShape("x").status, 422);
  EXPECT_EQ(EmptyText("x").status, 400);  // TEI's Empty
  EXPECT_EQ(ErrorTypeName(EmptyText("x").type), "Empty");
  EXPECT_EQ(TooManyInputs(3, 2).status, 422);  // TEI's Validation, 413 before v1.9.0
  EXPECT_EQ(TooManyInputs(3, 2).message, "batch size 3 > maximum allowed batch size 2");
  EXPECT_EQ(ErrorTypeName(TooManyInputs(3, 2).type), "Validation");
  EXPECT_EQ(TooLarge("x").status, 413);
  EXPECT_EQ(InvalidInput("x").status, 422);
  EXPECT_EQ(UnsupportedMediaType("x").status, 415);
  EXPECT_EQ(ErrorTypeName(UnsupportedMediaType("x").type), "Validation");
  EXPECT_EQ(NotFound("GET", "/x").status, 404);
  EXPECT_EQ(MethodNotAllowed("GET", "/predict").status, 405);
  EXPECT_EQ(Internal("x").status, 500);
  // A message quoting bytes that are not UTF-8 still serializes.
  EXPECT_NO_THROW(json::parse(MalformedBody("bad \xff byte").ToJson()));
}

TEST(ServerInfoTest, TeiFields) {
  ServerInfo info;
  info.model_id = "/models/sst2";
  info.model_dtype = "float32";
  info.labels = {"neg", "pos"};
  info.max_client_batch_size = 32;
  info.version = "0.1.0";
  const json j = json::parse(ServerInfoJson(info));
  EXPECT_EQ(j["model_id"], "/models/sst2");
  EXPECT_EQ(j["model_type"]["classifier"]["id2label"]["1"], "pos");
  EXPECT_EQ(j["model_type"]["classifier"]["label2id"]["neg"], 0);
  EXPECT_EQ(j["max_client_batch_size"], 32);
  for (const char* key :
       {"max_concurrent_requests", "max_input_length", "max_batch_tokens", "max_batch_requests",
        "tokenization_workers", "auto_truncate", "version", "model_dtype"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(HistogramTest, CumulativeBucketsSumAndCount) {
  Histogram h({1, 2, 4});
  for (double v : {0.5, 1.0, 1.5, 3.0, 100.0}) h.Observe(v);
  std::string out;
  h.Render("x", "route=\"/\"", &out);
  EXPECT_NE(out.find("x_bucket{route=\"/\",le=\"1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{route=\"/\",le=\"2\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{route=\"/\",le=\"4\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{route=\"/\",le=\"+Inf\"} 5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_sum{route=\"/\"} 106\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count{route=\"/\"} 5\n"), std::string::npos) << out;
}

TEST(ServerMetricsTest, RendersEveryFamily) {
  ServerMetrics m;
  m.RecordRequest("/predict", 200, 0.004);
  m.RecordRequest("/predict", 429, 0.001);
  m.RecordRequest("other", 404, 0);
  m.RecordRequest("/v1/embeddings", 200, 0.003);
  m.RecordRequest("/health", 200, 0.0001);
  m.RecordError(ErrorType::kOverloaded);
  m.RecordInputs(3);
  m.RecordBatch(3, 120, 0.002);
  const std::string text = m.Render({/*queued=*/2, 5, 1, 3, 0, 1}, /*ready=*/true);
  for (const char* line :
       {"padless_http_requests_total{route=\"/predict\",status=\"200\"} 1",
        "padless_http_requests_total{route=\"other\",status=\"404\"} 1",
        "padless_errors_total{type=\"Overloaded\"} 1",
        "padless_http_request_duration_seconds_count{route=\"/predict\"} 2",
        "padless_http_request_duration_seconds_count{route=\"/v1/embeddings\"} 1",
        "padless_batch_size_count 1", "padless_batch_tokens_sum 120",
        "padless_predict_inputs_total 3", "padless_queue_size 2", "padless_engine_rejected_total 1",
        "padless_ready 1", "# TYPE padless_batch_tokens histogram"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("padless_http_request_duration_seconds_count{route=\"/health\"}"),
            std::string::npos);
}

// The names come from base/enum_names.h tables; they are what flags, log lines, TEI clients and
// the metrics' labels read, so they must not change.
TEST(NameTablesTest, LogLevelsAndErrorTypesKeepTheirNames) {
  EXPECT_EQ(LogLevelName(LogLevel::kError), "error");
  EXPECT_EQ(LogLevelName(LogLevel::kWarn), "warn");
  EXPECT_EQ(LogLevelName(LogLevel::kInfo), "info");
  EXPECT_EQ(LogLevelName(LogLevel::kDebug), "debug");
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
    EXPECT_EQ(*ParseLogLevel(LogLevelName(level)), level);
  }
  EXPECT_EQ(ParseLogLevel("verbose").status().message(),
            "unknown log level 'verbose' (expected error, warn, info or debug)");
  EXPECT_EQ(ErrorTypeName(ErrorType::kValidation), "Validation");
  EXPECT_EQ(ErrorTypeName(ErrorType::kTokenizer), "Tokenizer");
  EXPECT_EQ(ErrorTypeName(ErrorType::kEmpty), "Empty");
  EXPECT_EQ(ErrorTypeName(ErrorType::kOverloaded), "Overloaded");
  EXPECT_EQ(ErrorTypeName(ErrorType::kBackend), "Backend");
  EXPECT_EQ(ErrorTypeName(ErrorType::kUnhealthy), "Unhealthy");
}

TEST(ServerLogTest, LevelsFilterAndLinesAreWhole) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
  EXPECT_EQ(LevelForStatus(200), LogLevel::kInfo);
  EXPECT_EQ(LevelForStatus(429), LogLevel::kWarn);
  EXPECT_EQ(LevelForStatus(500), LogLevel::kError);
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ServerLog log(LogLevel::kWarn, f);
  log.Write(LogLevel::kInfo, "hidden");
  log.Write(LogLevel::kWarn, "shown");
  std::rewind(f);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const std::string text(buf, n);
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find("warn  shown\n"), std::string::npos) << text;
}

TEST(OpenApiTest, ParsesAndNamesEveryRoute) {
  const json doc = json::parse(std::string(OpenApiJson()));
  EXPECT_EQ(doc["openapi"].get<std::string>().substr(0, 2), "3.");
  EXPECT_TRUE(doc["paths"]["/predict"].contains("post"));
  EXPECT_TRUE(doc["paths"]["/"].contains("post"));
  for (const char* path : {"/predict", "/"}) {
    for (const char* status : {"400", "413", "415", "422", "424", "429", "503"}) {
      EXPECT_TRUE(doc["paths"][path]["post"]["responses"].contains(status))
          << path << " " << status;
    }
  }
  for (const char* path : {"/health", "/info", "/metrics", "/openapi.json"}) {
    EXPECT_TRUE(doc["paths"][path].contains("get")) << path;
  }
  EXPECT_TRUE(doc["components"]["schemas"].contains("PredictRequest"));
  EXPECT_TRUE(doc["components"]["schemas"].contains("ErrorResponse"));
}

}  // namespace
}  // namespace padless::serve::http
