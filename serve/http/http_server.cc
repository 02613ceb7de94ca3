#include "padless/serve/http/http_server.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/serve/http/json_content_type.h"
#include "padless/serve/http/openapi.h"

namespace padless::serve::http {
namespace {

HttpResponse JsonResponse(std::string body) {
  HttpResponse response;
  response.body = std::move(body);
  return response;
}

bool IsModelRoute(absl::string_view path) {
  for (absl::string_view p : {"/", "/predict", "/rerank", "/embed", "/embed_all", "/similarity",
                              "/v1/embeddings", "/embeddings", "/tokenize", "/decode"}) {
    if (path == p) return true;
  }
  return false;
}

bool IsGetRoute(absl::string_view path) {
  return path == "/health" || path == "/info" || path == "/metrics" || path == "/openapi.json";
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, ServerLog* log)
    : options_(std::move(options)), log_(log) {
  EventServerOptions transport;
  transport.host = options_.host;
  transport.port = options_.port;
  transport.io_threads = options_.io_threads;
  transport.body_limit = options_.body_limit;
  transport.max_connections = options_.max_connections;
  transport.header_timeout = options_.header_timeout;
  transport.body_timeout = options_.body_timeout;
  transport.idle_timeout = options_.idle_timeout;
  server_ = std::make_unique<EventServer>(
      transport, [this](HttpRequest request, Reply reply) { Route(std::move(request), reply); },
      [this](const AnsweredRequest& answer) { LogAnswer(answer); });
}

HttpServer::~HttpServer() { Drain(); }

int64_t HttpServer::open_connections() const { return server_->open_connections(); }

void HttpServer::Route(HttpRequest request, Reply reply) {
  const bool head = request.method == "HEAD";
  if (IsGetRoute(request.path) && (request.method == "GET" || head)) {
    HttpResponse response = request.path == "/health"    ? Health()
                            : request.path == "/info"    ? Info()
                            : request.path == "/metrics" ? Metrics()
                                                         : JsonResponse(std::string(OpenApiJson()));
    if (head) response.body.clear();
    return reply->Send(std::move(response));
  }
  if (IsModelRoute(request.path) && request.method == "POST") {
    // Every POST route reads a JSON body: one whose Content-Type is not JSON is refused with 415
    // before it is parsed, as TEI refuses it (json_content_type.h).
    if (std::optional<ApiError> e = CheckJsonContentType(request.content_type)) {
      return reply->Send(ErrorResponse(*e));
    }
    if (std::optional<ApiError> e = NotServing()) return reply->Send(ErrorResponse(*e));
    if (RouteModel(request, reply)) return;
  }
  HttpResponse response;
  if (IsGetRoute(request.path) || IsModelRoute(request.path)) {
    response = ErrorResponse(MethodNotAllowed(request.method, request.path));
    response.headers.emplace_back("Allow", IsGetRoute(request.path) ? "GET, HEAD" : "POST");
  } else {
    response = ErrorResponse(NotFound(request.method, request.path));
  }
  reply->Send(std::move(response));
}

// The model routes, once the body is JSON and the engine serves; false for a path it does not
// know (a 404 then). The root route does what the model kind does, as TEI's does.
bool HttpServer::RouteModel(const HttpRequest& request, Reply& reply) {
  using Handler = void (HttpServer::*)(const HttpRequest&, Reply);
  static const std::pair<absl::string_view, Handler> kRoutes[] = {
      {"/predict", &HttpServer::HandlePredict},
      {"/rerank", &HttpServer::HandleRerank},
      {"/embed", &HttpServer::HandleEmbed},
      {"/embed_all", &HttpServer::HandleEmbedAll},
      {"/similarity", &HttpServer::HandleSimilarity},
      {"/v1/embeddings", &HttpServer::HandleOpenAiEmbeddings},
      {"/embeddings", &HttpServer::HandleOpenAiEmbeddings},
      {"/tokenize", &HttpServer::HandleTokenize},
      {"/decode", &HttpServer::HandleDecode},
  };
  if (request.path == "/") {
    const Handler root = engine_->kind() == ModelKind::kEmbedding  ? &HttpServer::HandleEmbed
                         : engine_->kind() == ModelKind::kReranker ? &HttpServer::HandleRerank
                                                                   : &HttpServer::HandlePredict;
    (this->*root)(request, reply);
    return true;
  }
  for (const auto& [path, handler] : kRoutes) {
    if (request.path == path) {
      (this->*handler)(request, reply);
      return true;
    }
  }
  return false;
}

void HttpServer::SubmitThenAnswer(std::vector<EngineRequest> requests, Reply reply, Answer answer) {
  const auto inputs = static_cast<int64_t>(requests.size());
  absl::StatusOr<RequestHandle> submitted = engine_->Submit(requests);
  if (!submitted.ok()) {
    HttpResponse refused = ErrorResponse(FromEngineStatus(submitted.status()));
    refused.note.inputs = inputs;
    return reply->Send(std::move(refused));
  }
  metrics_.RecordInputs(inputs);
  // The handle lives until the answer is built; OnDone's callback holds it and is dropped once it
  // has run, so nothing keeps the handle alive past that.
  auto handle = std::make_shared<RequestHandle>(*std::move(submitted));
  RequestHandle* h = handle.get();
  h->OnDone([handle, reply, answer = std::move(answer), inputs]() mutable {
    reply->Defer([handle = std::move(handle), answer = std::move(answer), inputs]() mutable {
      Results results = handle->Wait();
      int64_t tokens = 0;
      for (const absl::StatusOr<EngineResult>& r : results) tokens += r.ok() ? r->tokens : 0;
      HttpResponse response = answer(std::move(results));
      response.note.inputs = inputs;
      response.note.tokens = tokens;
      return response;
    });
  });
}

HttpResponse HttpServer::ErrorResponse(const ApiError& error) const {
  metrics_.RecordError(error.type);
  HttpResponse response;
  response.status = error.status;
  response.body = error.ToJson();
  response.note.error = error.message;
  return response;
}

std::optional<ApiError> HttpServer::NotServing() const {
  switch (state_.load()) {
    case State::kReady:
      return std::nullopt;
    case State::kLoading:
      return Unavailable("the model is loading");
    case State::kDraining:
      return Unavailable("the server is shutting down");
  }
  return Unavailable("not serving");
}

std::optional<ApiError> HttpServer::WrongKind(ModelKind kind, absl::string_view route) const {
  if (engine_->kind() == kind) return std::nullopt;
  return ApiError{400, ErrorType::kBackend,
                  absl::StrCat(route, " needs a model of kind ", ModelKindName(kind),
                               "; this server's model is a ", ModelKindName(engine_->kind()))};
}

HttpResponse HttpServer::Health() const {
  if (std::optional<ApiError> e = NotServing()) return ErrorResponse(*e);
  return HttpResponse{200, "application/json", "", {}, {}};
}

HttpResponse HttpServer::Info() const {
  if (!has_engine_.load()) return ErrorResponse(*NotServing());
  return JsonResponse(ServerInfoJson(info_));
}

HttpResponse HttpServer::Metrics() const {
  EngineGauges gauges;
  if (has_engine_.load()) {
    const EngineStats s = engine_->stats();
    gauges = {s.queued,    s.accepted, s.rejected,       s.completed,
              s.cancelled, s.batches,  s.graphed_batches};
  }
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4";
  response.body = metrics_.Render(gauges, ready());
  return response;
}

}  // namespace padless::serve::http
