#include "padless/serve/http/metrics.h"

#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

// 1 ms .. about 33 s: a request on a busy CPU can take seconds.
std::vector<double> LatencyBuckets() { return ExponentialBuckets(0.001, 2, 16); }

void Family(std::string* out, absl::string_view name, absl::string_view type,
            absl::string_view help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void Scalar(std::string* out, absl::string_view name, absl::string_view type,
            absl::string_view help, int64_t value) {
  Family(out, name, type, help);
  absl::StrAppend(out, name, " ", value, "\n");
}

// The routes that run the model: their latency is what a client of the service waits for (the
// GET routes and unknown paths would only dilute it).
bool IsInferenceRoute(absl::string_view route) {
  for (absl::string_view r : {"/predict", "/", "/rerank", "/embed", "/embed_all", "/similarity",
                              "/v1/embeddings", "/embeddings"}) {
    if (route == r) return true;
  }
  return false;
}

}  // namespace

ServerMetrics::ServerMetrics()
    : batch_size_(ExponentialBuckets(1, 2, 12)),
      batch_tokens_(ExponentialBuckets(64, 2, 12)),
      batch_seconds_(LatencyBuckets()) {}

void ServerMetrics::RecordRequest(absl::string_view route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{std::string(route), status}];
  if (IsInferenceRoute(route)) {
    auto it = latency_.find(std::string(route));
    if (it == latency_.end()) it = latency_.emplace(std::string(route), LatencyBuckets()).first;
    it->second.Observe(seconds);
  }
}

void ServerMetrics::RecordError(ErrorType type) {
  std::lock_guard<std::mutex> lock(mu_);
  ++errors_[std::string(ErrorTypeName(type))];
}

void ServerMetrics::RecordInputs(int64_t n) { inputs_ += n; }

void ServerMetrics::RecordBatch(int64_t sequences, int64_t tokens, double device_seconds) {
  batch_size_.Observe(static_cast<double>(sequences));
  batch_tokens_.Observe(static_cast<double>(tokens));
  batch_seconds_.Observe(device_seconds);
}

void ServerMetrics::RenderRequests(std::string* out) const {
  Family(out, "padless_http_requests_total", "counter",
         "HTTP requests answered, by route and status");
  for (const auto& [key, n] : requests_) {
    absl::StrAppend(out, "padless_http_requests_total{route=\"", key.first, "\",status=\"",
                    key.second, "\"} ", n, "\n");
  }
  Family(out, "padless_errors_total", "counter", "Error answers by TEI error type");
  for (const auto& [type, n] : errors_) {
    absl::StrAppend(out, "padless_errors_total{type=\"", type, "\"} ", n, "\n");
  }
  Family(out, "padless_http_request_duration_seconds", "histogram",
         "Latency of the predict routes, from the request read to the response written");
  for (const auto& [route, h] : latency_) {
    h.Render("padless_http_request_duration_seconds", absl::StrCat("route=\"", route, "\""), out);
  }
}

void ServerMetrics::RenderHistograms(std::string* out) const {
  Family(out, "padless_batch_size", "histogram", "Sequences per device batch");
  batch_size_.Render("padless_batch_size", "", out);
  Family(out, "padless_batch_tokens", "histogram", "Real tokens per device batch");
  batch_tokens_.Render("padless_batch_tokens", "", out);
  Family(out, "padless_batch_device_seconds", "histogram",
         "Device time per batch, from launch until its results are back");
  batch_seconds_.Render("padless_batch_device_seconds", "", out);
}

std::string ServerMetrics::Render(const EngineGauges& engine, bool ready) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RenderRequests(&out);
  }
  RenderHistograms(&out);
  Scalar(&out, "padless_predict_inputs_total", "counter", "Texts and pairs classified",
         inputs_.load());
  Scalar(&out, "padless_queue_size", "gauge", "Requests accepted by the engine, not finished",
         engine.queued);
  Scalar(&out, "padless_engine_accepted_total", "counter", "Requests the engine admitted",
         engine.accepted);
  Scalar(&out, "padless_engine_rejected_total", "counter",
         "Requests refused with a full queue (answered 429)", engine.rejected);
  Scalar(&out, "padless_engine_completed_total", "counter", "Requests finished", engine.completed);
  Scalar(&out, "padless_engine_cancelled_total", "counter", "Requests cancelled", engine.cancelled);
  Scalar(&out, "padless_engine_batches_total", "counter", "Device batches run", engine.batches);
  Scalar(&out, "padless_engine_graphed_batches_total", "counter",
         "Device batches that replayed a CUDA graph", engine.graphed_batches);
  Scalar(&out, "padless_ready", "gauge", "1 while serving; 0 while loading or draining",
         ready ? 1 : 0);
  return out;
}

}  // namespace padless::serve::http
