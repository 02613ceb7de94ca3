#include "padless/serve/http/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <utility>

#include "padless/serve/http/openapi.h"
#include "request_trace.h"

namespace padless::serve::http {
namespace {

// Long-lived connections are what keep-alive is for: httplib's default closes one after 5
// requests. An idle one is still closed after the keep-alive timeout (5 s), which also bounds
// how long a drain waits for an idle client.
constexpr size_t kKeepAliveMaxRequests = 100000;

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
  server_->set_payload_max_length(options_.body_limit);
  InstallRoutes();
  InstallHooks();
}

HttpServer::~HttpServer() { Drain(); }

void HttpServer::InstallRoutes() {
  auto predict = [this](const httplib::Request& req, httplib::Response& res) {
    HandlePredict(req, res);
  };
  server_->Post("/predict", predict);
  server_->Post("/", predict);
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
    gauges = {s.queued, s.accepted, s.rejected, s.completed, s.cancelled, s.batches};
  }
  res.set_content(metrics_.Render(gauges, ready()), "text/plain; version=0.0.4");
}

}  // namespace padless::serve::http
