// HttpServer's lifecycle (Bind, Start, SetEngine, Drain) and the one log line and the metrics of
// each answered request, which the transport reports once the response is written (with the
// handler's LogNote: the inputs, the model tokens, the error message).
#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/serve/http/http_server.h"

namespace padless::serve::http {
namespace {

constexpr const char* kRoutePaths[] = {
    "/predict",       "/",           "/rerank", "/embed", "/embed_all", "/similarity",
    "/v1/embeddings", "/embeddings", "/health", "/info",  "/metrics",   "/openapi.json"};

// A metrics label: the route, or "other" for any path a client made up (a bounded label set).
std::string RouteLabel(const std::string& path) {
  for (const char* p : kRoutePaths) {
    if (path == p) return path;
  }
  return "other";
}

// A request's path and method come from the client: one log line stays one line, and short.
std::string Printable(absl::string_view s) {
  constexpr size_t kMax = 256;
  std::string out = absl::CHexEscape(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

absl::StatusOr<int> HttpServer::Bind() {
  absl::StatusOr<int> port = server_->Bind();
  if (!port.ok()) return port.status();
  port_ = *port;
  return port;
}

absl::Status HttpServer::Start() {
  if (port_ <= 0) return absl::FailedPreconditionError("Start before Bind");
  return server_->Start();
}

void HttpServer::SetEngine(std::unique_ptr<InferenceEngine> engine, ServerInfo info) {
  engine_ = std::move(engine);
  info_ = std::move(info);
  engine_->SetBatchObserver([this](const BatchStats& b) {
    metrics_.RecordBatch(b.sequences, b.tokens,
                         std::chrono::duration<double>(b.device_time).count());
  });
  has_engine_.store(true);
  State loading = State::kLoading;  // a drain that began during loading stays a drain
  state_.compare_exchange_strong(loading, State::kReady);
}

void HttpServer::BeginDrain() { state_.store(State::kDraining); }

void HttpServer::Drain() {
  BeginDrain();
  // Returns once every request already read has been answered and the I/O threads are joined;
  // only then may the engine go (a deferred answer still reads its results).
  server_->Drain();
  if (has_engine_.load()) engine_->Shutdown();
}

void HttpServer::LogAnswer(const AnsweredRequest& answer) {
  const double seconds =
      std::chrono::duration<double>(answer.read_time + answer.answer_time).count();
  metrics_.RecordRequest(RouteLabel(answer.path), answer.status, seconds);
  const LogLevel level = LevelForStatus(answer.status);
  if (log_ == nullptr || !log_->enabled(level)) return;
  std::string line =
      absl::StrFormat("%s %s %d %.1fms in=%dB out=%dB inputs=%d", Printable(answer.method),
                      Printable(answer.path), answer.status, seconds * 1e3, answer.request_bytes,
                      answer.response_bytes, answer.note.inputs);
  if (answer.note.tokens >= 0) absl::StrAppend(&line, " tokens=", answer.note.tokens);
  absl::StrAppend(&line, " peer=", answer.peer);
  if (!answer.delivered) absl::StrAppend(&line, " undelivered");
  const std::string& error = answer.error.empty() ? answer.note.error : answer.error;
  if (!error.empty() && log_->enabled(LogLevel::kDebug)) {
    absl::StrAppend(&line, " error=\"", Printable(error), "\"");
  }
  log_->Write(level, line);
}

}  // namespace padless::serve::http
