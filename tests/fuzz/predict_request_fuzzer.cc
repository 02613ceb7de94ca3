// Fuzzes `padless serve`'s request parser (serve/http/predict_request.h) over raw request
// bodies: any bytes must give a request or a TEI error, never a crash. A request has between 1
// and max_client_batch_size inputs (exactly 1 unless it is a batch), no empty text, and its answer
// serializes; an error has a body status (400, 413 or 422), a message, and a JSON body. The first
// byte sets max_client_batch_size (1..64); the rest is the body, which is also given to the
// Content-Type check (json_content_type.h) as a header value: accepted, or a 415 that serializes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz_util.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/json_content_type.h"
#include "padless/serve/http/predict_request.h"
#include "padless/serve/http/predict_response.h"

namespace padless::serve::http {
namespace {

void CheckRequest(const PredictRequest& r, size_t limit, absl::string_view body) {
  FUZZ_CHECK(!r.inputs.empty() && r.inputs.size() <= limit,
             absl::StrCat(r.inputs.size(), " inputs, limit ", limit));
  FUZZ_CHECK(r.batch || r.inputs.size() == 1, absl::StrCat(r.inputs.size(), " inputs, no batch"));
  for (const Sequence& s : r.inputs) {
    FUZZ_CHECK(!s.text.empty() && (!s.pair || !s.pair->empty()), "an empty text was accepted");
  }
  FUZZ_CHECK(JsonNestingDepth(body, kMaxJsonDepth) <= kMaxJsonDepth, std::string(body));
  const std::vector<std::vector<float>> scores(r.inputs.size(), {0.25f, 0.5f, 0.25f});
  absl::StatusOr<std::string> answer = PredictResponseJson(scores, {"a", "b", "c"}, r.batch);
  FUZZ_CHECK(answer.ok(), answer.status().ToString());
  const nlohmann::json j = nlohmann::json::parse(*answer, nullptr, false);
  FUZZ_CHECK(j.is_array() && j.size() == (r.batch ? r.inputs.size() : 3), *answer);
}

// The body's bytes as a Content-Type header: accepted, or refused with a 415 whose body is JSON.
void CheckContentType(absl::string_view content_type) {
  const std::optional<ApiError> e = CheckJsonContentType(content_type);
  FUZZ_CHECK(e.has_value() != IsJsonContentType(content_type), std::string(content_type));
  if (!e) return;
  FUZZ_CHECK(e->status == 415 && !e->message.empty(), e->message);
  FUZZ_CHECK(!nlohmann::json::parse(e->ToJson(), nullptr, false).is_discarded(), e->ToJson());
}

void CheckError(const ApiError& e) {
  FUZZ_CHECK(e.status == 400 || e.status == 413 || e.status == 422,
             absl::StrCat(e.status, " ", e.message));
  FUZZ_CHECK(!e.message.empty(), "an error without a message");
  FUZZ_CHECK(!nlohmann::json::parse(e.ToJson(), nullptr, false).is_discarded(), e.ToJson());
}

}  // namespace
}  // namespace padless::serve::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace padless::serve::http;
  padless::fuzz::FuzzInput in(data, size);
  const size_t limit = static_cast<size_t>(in.Range(1, 64));
  const absl::string_view body = in.Rest();
  const PredictParse parsed = ParsePredictRequest(body, PredictLimits{limit});
  if (parsed.ok()) {
    CheckRequest(parsed.request, limit, body);
  } else {
    CheckError(*parsed.error);
  }
  // The same bytes, the same answer.
  const PredictParse again = ParsePredictRequest(body, PredictLimits{limit});
  FUZZ_CHECK(again.ok() == parsed.ok(), std::string(body));
  CheckContentType(body);
  return 0;
}
