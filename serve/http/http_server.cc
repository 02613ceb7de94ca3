#include "padless/serve/http/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "padless/serve/http/json_content_type.h"
#include "padless/serve/http/openapi.h"
#include "request_trace.h"

namespace padless::serve::http {
namespace {

// Long-lived connections are what keep-alive is for: httplib's default closes one after 5
// requests. An idle one is still closed after the keep-alive timeout (5 s), which also bounds
// how long a drain waits for an idle client.
constexpr size_t kKeepAliveMaxRequests = 100000;

// httplib's default sets SO_REUSEPORT, under which a second server binds a port in use without an
// error (and the kernel splits the connections between them). SO_REUSEADDR alone still allows a
// restart while the last run's connections linger in TIME_WAIT.
void ListenerSocketOptions(int socket) {
  int yes = 1;
  setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// The request's Content-Type header (the first, if sent twice); none when it has none.
std::optional<absl::string_view> ContentTypeOf(const httplib::Request& req) {
  const auto it = req.headers.find("Content-Type");  // httplib compares names case-insensitively
  if (it == req.headers.end()) return std::nullopt;
  return absl::string_view(it->second);
}

}  // namespace

RequestTrace& CurrentTrace() {
  thread_local RequestTrace trace;
  return trace;
}

HttpServer::HttpServer(ServerOptions options, ServerLog* log)
    : options_(std::move(options)), log_(log), server_(std::make_unique<httplib::Server>()) {
  const size_t threads = static_cast<size_t>(std::max(1, options_.http_threads));
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_keep_alive_max_count(kKeepAliveMaxRequests);
  server_->set_socket_options([this](int socket) {
    ListenerSocketOptions(socket);
    listen_socket_ = socket;  // the one socket httplib creates with these options
  });
  // httplib writes a response's headers and body apart: without TCP_NODELAY, Nagle's algorithm
  // holds the body until the client's delayed ACK, 40 ms per request on Linux.
  server_->set_tcp_nodelay(true);
  server_->set_payload_max_length(options_.body_limit);
  InstallRoutes();
  InstallHooks();
}

HttpServer::~HttpServer() { Drain(); }

void HttpServer::InstallRoutes() {
  // Every POST route reads a JSON body: one whose Content-Type is not JSON is refused with 415
  // before it is parsed, as TEI refuses it (json_content_type.h).
  const auto post_json = [this](const char* path, auto handle) {
    server_->Post(path, [this, handle](const httplib::Request& req, httplib::Response& res) {
      if (std::optional<ApiError> e = CheckJsonContentType(ContentTypeOf(req))) {
        return SendError(*e, res);
      }
      handle(req, res);
    });
  };
  const auto predict = [this](const httplib::Request& req, httplib::Response& res) {
    HandlePredict(req, res);
  };
  post_json("/predict", predict);
  post_json("/", predict);
  server_->Get("/health",
               [this](const httplib::Request&, httplib::Response& res) { HandleHealth(res); });
  server_->Get("/info",
               [this](const httplib::Request&, httplib::Response& res) { HandleInfo(res); });
  server_->Get("/metrics",
               [this](const httplib::Request&, httplib::Response& res) { HandleMetrics(res); });
  server_->Get("/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(OpenApiJson()), "application/json");
  });
}

void HttpServer::SendError(const ApiError& error, httplib::Response& res) {
  metrics_.RecordError(error.type);
  res.status = error.status;
  res.set_content(error.ToJson(), "application/json");
  CurrentTrace().error = error.message;
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

void HttpServer::HandleHealth(httplib::Response& res) {
  if (std::optional<ApiError> e = NotServing()) return SendError(*e, res);
  res.status = 200;
}

void HttpServer::HandleInfo(httplib::Response& res) {
  if (!has_engine_.load()) return SendError(*NotServing(), res);
  res.set_content(ServerInfoJson(info_), "application/json");
}

void HttpServer::HandleMetrics(httplib::Response& res) {
  EngineGauges gauges;
  if (has_engine_.load()) {
    const EngineStats s = engine_->stats();
    gauges = {s.queued,    s.accepted, s.rejected,       s.completed,
              s.cancelled, s.batches,  s.graphed_batches};
  }
  res.set_content(metrics_.Render(gauges, ready()), "text/plain; version=0.0.4");
}

}  // namespace padless::serve::http
