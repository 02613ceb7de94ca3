// `padless serve`'s HTTP/1.1 server: Hugging Face text-embeddings-inference's API (and OpenAI's
// embeddings route) over an InferenceEngine, on the event-driven transport of event_server.h.
//   POST /predict           classify (predict_request.h, predict_response.h)
//   POST /rerank            score (query, text) pairs with a reranker (rerank_api.h)
//   POST /embed             one vector per input (embed_request.h, embed_response.h)
//   POST /embed_all         one vector per token of each input
//   POST /similarity        cosine of a sentence to others (similarity_api.h)
//   POST /v1/embeddings     OpenAI's embeddings API, also at /embeddings (openai_embeddings.h)
//   POST /tokenize          the tokens of each input, with byte offsets (tokenize_api.h)
//   POST /decode            the text of token ids (decode_api.h)
//   POST /                  what the model kind does: predict, rerank or embed, as TEI's root
//   GET  /health            200 when serving; 503 while loading or draining
//   GET  /info              the model, its kind and the limits (server_info.h); 503 while loading
//   GET  /metrics           Prometheus text (metrics.h)
//   GET  /openapi.json      the OpenAPI 3 description (openapi.h)
// A route the model kind does not serve (/embed on a classifier) answers 400. Another path
// answers 404, another method on these paths 405, a body over the limit 413, a POST body whose
// Content-Type is absent or not JSON 415 (json_content_type.h), all with TEI's JSON error body
// (api_error.h). Every answer is logged in one line (server_log.h). No handler blocks an I/O
// thread: engine work answers when its results are in (RequestHandle::OnDone).
//
// Lifecycle: Bind, Start (listening, answering 503 to model routes), SetEngine (serving), then
// Drain: new requests get 503, the listener closes, the requests in flight finish, the I/O
// threads are joined, and the engine is shut down (its accepted work finished). Bind and SetEngine
// are separate so that the port is known, and /health answers, while the model loads.
#ifndef PADLESS_SERVE_HTTP_HTTP_SERVER_H_
#define PADLESS_SERVE_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/event_server.h"
#include "padless/serve/http/http_message.h"
#include "padless/serve/http/metrics.h"
#include "padless/serve/http/server_info.h"
#include "padless/serve/http/server_log.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: a free port, chosen by the kernel
  size_t body_limit = 2'000'000;      // bytes; TEI's --payload-limit default
  size_t max_client_batch_size = 32;  // inputs per request (422 above)
  // The event loop's threads: they parse, route and write; JSON bodies of many vectors are built
  // on them too. A connection costs memory, not a thread.
  int io_threads = 2;
  int max_connections = 32'768;  // open at once; a new one over the cap is answered 503
  std::chrono::milliseconds header_timeout{10'000};  // a request's headers must arrive by then
  std::chrono::milliseconds body_timeout{30'000};    // and its body by then after them
  std::chrono::milliseconds idle_timeout{60'000};    // an idle keep-alive connection is closed
  bool auto_truncate = true;  // the default when a request has no `truncate`
  std::string model_name;     // OpenAI's `model` field in answers (the model directory's name)
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServerLog* log);
  ~HttpServer();  // Drain()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; the port (the chosen one for port 0).
  absl::StatusOr<int> Bind();
  // Starts answering on the I/O threads (after Bind).
  absl::Status Start();
  // Serves `engine`, described by `info` in /info. Called once.
  void SetEngine(std::unique_ptr<InferenceEngine> engine, ServerInfo info);
  // From now on /health and new model requests answer 503 (the first step of Drain).
  void BeginDrain();
  // BeginDrain, then stops accepting connections, finishes what was accepted, joins the threads,
  // and shuts the engine down. Idempotent; thread-safe against the handlers (not against itself).
  void Drain();

  bool ready() const { return state_.load() == State::kReady; }
  int port() const { return port_; }
  int64_t open_connections() const;

 private:
  enum class State { kLoading, kReady, kDraining };
  using Reply = std::shared_ptr<Responder>;
  using Results = std::vector<absl::StatusOr<EngineResult>>;
  // Builds the answer from the engine's results, on an I/O thread.
  using Answer = std::function<HttpResponse(Results)>;

  // Dispatches by path and method (http_server.cc).
  void Route(HttpRequest request, Reply reply);
  bool RouteModel(const HttpRequest& request, Reply& reply);
  void HandlePredict(const HttpRequest& request, Reply reply);            // predict_handler.cc
  void HandleRerank(const HttpRequest& request, Reply reply);             // rerank_handler.cc
  void HandleEmbed(const HttpRequest& request, Reply reply);              // embed_handlers.cc
  void HandleEmbedAll(const HttpRequest& request, Reply reply);           // embed_handlers.cc
  void HandleSimilarity(const HttpRequest& request, Reply reply);         // embed_handlers.cc
  void HandleOpenAiEmbeddings(const HttpRequest& request, Reply reply);  // openai_handler.cc
  void HandleTokenize(const HttpRequest& request, Reply reply);          // tokenize_handlers.cc
  void HandleDecode(const HttpRequest& request, Reply reply);            // tokenize_handlers.cc
  HttpResponse Health() const;
  HttpResponse Info() const;
  HttpResponse Metrics() const;
  // Submits `requests` to the engine and answers with `answer`'s response once every result is
  // in, or at once with the engine's refusal (queue full, shut down).
  void SubmitThenAnswer(std::vector<EngineRequest> requests, Reply reply, Answer answer);
  // `error` as TEI's JSON body, counted in the metrics.
  HttpResponse ErrorResponse(const ApiError& error) const;
  // Loading or draining: the 503 to answer instead of serving; none when ready.
  std::optional<ApiError> NotServing() const;
  // The engine's kind is not `kind`: the 400 naming what the model serves; none when it is.
  std::optional<ApiError> WrongKind(ModelKind kind, absl::string_view route) const;
  // The log line and the metrics of an answered request (http_server_lifecycle.cc).
  void LogAnswer(const AnsweredRequest& answer);

  const ServerOptions options_;
  ServerLog* const log_;
  mutable ServerMetrics metrics_;
  std::unique_ptr<EventServer> server_;
  std::unique_ptr<InferenceEngine> engine_;
  ServerInfo info_;
  std::atomic<State> state_{State::kLoading};
  // Set (release) once engine_ and info_ are written; a drain can begin before it is.
  std::atomic<bool> has_engine_{false};
  int port_ = -1;
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_HTTP_SERVER_H_
