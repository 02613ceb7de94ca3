// `padless serve`'s HTTP/1.1 server: Hugging Face text-embeddings-inference's predict API over an
// InferenceEngine, on cpp-httplib (keep-alive, a thread pool, a payload limit).
//   POST /predict, POST /   classify (predict_request.h, predict_response.h)
//   GET  /health            200 when serving; 503 while loading or draining
//   GET  /info              the model and the limits (server_info.h); 503 while loading
//   GET  /metrics           Prometheus text (metrics.h)
//   GET  /openapi.json      the OpenAPI 3 description (openapi.h)
// Another path answers 404, another method on these paths 405, a body over the limit 413, a POST
// body whose Content-Type is absent or not JSON 415 (json_content_type.h), all with TEI's JSON
// error body (api_error.h). Every answer is logged in one line (server_log.h).
//
// Lifecycle: Bind, Start (listening, answering 503 to predict), SetEngine (serving), then
// Drain: new requests get 503, the listener closes, the requests in flight finish, the handler
// threads are joined, and the engine is shut down (its accepted work finished). Bind and SetEngine
// are separate so that the port is known, and /health answers, while the model loads.
#ifndef PADLESS_SERVE_HTTP_HTTP_SERVER_H_
#define PADLESS_SERVE_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/metrics.h"
#include "padless/serve/http/server_info.h"
#include "padless/serve/http/server_log.h"
#include "padless/serve/inference_engine.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace padless::serve::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: a free port, chosen by the kernel
  size_t body_limit = 2'000'000;      // bytes; TEI's --payload-limit default
  size_t max_client_batch_size = 32;  // inputs per request (413 above)
  // Connections served at once: cpp-httplib gives each open (keep-alive) connection a pool thread
  // for its lifetime, so this bounds concurrent clients; more wait to be served.
  int http_threads = 64;
  bool auto_truncate = true;  // the default when a request has no `truncate`
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServerLog* log);
  ~HttpServer();  // Drain()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; the port (the chosen one for port 0).
  absl::StatusOr<int> Bind();
  // Starts answering on a thread of its own (after Bind).
  absl::Status Start();
  // Serves `engine`, described by `info` in /info. Called once.
  void SetEngine(std::unique_ptr<InferenceEngine> engine, ServerInfo info);
  // From now on /health and new predict requests answer 503 (the first step of Drain).
  void BeginDrain();
  // BeginDrain, then stops accepting connections, finishes what was accepted, joins the threads,
  // and shuts the engine down. Idempotent; thread-safe against the handlers (not against itself).
  void Drain();

  bool ready() const { return state_.load() == State::kReady; }
  int port() const { return port_; }

 private:
  enum class State { kLoading, kReady, kDraining };

  void InstallRoutes();  // http_server.cc
  void InstallHooks();   // error bodies, logging, metrics (http_server_lifecycle.cc)
  void HandlePredict(const httplib::Request& req, httplib::Response& res);  // predict_handler.cc
  void HandleHealth(httplib::Response& res);
  void HandleInfo(httplib::Response& res);
  void HandleMetrics(httplib::Response& res);
  // Answers `error` as TEI's JSON body and counts it.
  void SendError(const ApiError& error, httplib::Response& res);
  // TEI's JSON body for an error status httplib set itself (http_server_lifecycle.cc).
  void FillErrorBody(const httplib::Request& req, httplib::Response& res);
  // The log line and the metrics of an answered request (http_server_lifecycle.cc).
  void LogAnswer(const httplib::Request& req, const httplib::Response& res);
  // Loading or draining: the 503 to answer instead of serving; none when ready.
  std::optional<ApiError> NotServing() const;

  const ServerOptions options_;
  ServerLog* const log_;
  ServerMetrics metrics_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<InferenceEngine> engine_;
  ServerInfo info_;
  std::atomic<State> state_{State::kLoading};
  // Set (release) once engine_ and info_ are written; a drain can begin before it is.
  std::atomic<bool> has_engine_{false};
  std::thread listener_;
  int port_ = -1;
  int listen_socket_ = -1;  // the listening socket, for its backlog (Bind)
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_HTTP_SERVER_H_
