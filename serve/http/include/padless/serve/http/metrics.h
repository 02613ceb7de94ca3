// The metrics of `padless serve`, rendered for GET /metrics in Prometheus' text format (0.0.4):
//   padless_http_requests_total{route,status}        every answered request
//   padless_http_request_duration_seconds{route}     latency of the routes that run the model
//   padless_errors_total{type}                       error answers by TEI error type
//   padless_predict_inputs_total                     texts (and pairs) classified
//   padless_batch_size / padless_batch_tokens         per device batch (the engine's observer)
//   padless_batch_device_seconds                      a batch's device time
//   padless_queue_size, padless_engine_*_total        the engine's counters at scrape time
//   padless_ready                                     1 while serving, 0 loading or draining
// Pure (no HTTP, no model): the server feeds it; thread-safe.
#ifndef PADLESS_SERVE_HTTP_METRICS_H_
#define PADLESS_SERVE_HTTP_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/histogram.h"

namespace padless::serve::http {

// The engine's side at scrape time (InferenceEngine::stats(), copied by the server).
struct EngineGauges {
  int64_t queued = 0;
  int64_t accepted = 0;
  int64_t rejected = 0;
  int64_t completed = 0;
  int64_t cancelled = 0;
  int64_t batches = 0;
  int64_t graphed_batches = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();

  // `route` is one of the server's routes, or "other" for a path it does not serve (so that
  // scanners cannot grow the label set).
  void RecordRequest(absl::string_view route, int status, double seconds);
  void RecordError(ErrorType type);
  void RecordInputs(int64_t n);
  void RecordBatch(int64_t sequences, int64_t tokens, double device_seconds);

  std::string Render(const EngineGauges& engine, bool ready) const;

 private:
  void RenderRequests(std::string* out) const;
  void RenderHistograms(std::string* out) const;

  mutable std::mutex mu_;  // the maps below
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;  // per route that runs the model
  std::map<std::string, uint64_t> errors_;
  std::atomic<int64_t> inputs_{0};
  Histogram batch_size_;
  Histogram batch_tokens_;
  Histogram batch_seconds_;
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_METRICS_H_
