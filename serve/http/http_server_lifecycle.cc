// HttpServer's lifecycle (Bind, Start, SetEngine, Drain) and the hooks around every request:
// the JSON error bodies of the answers httplib makes itself, the exception guard, and the one log
// line and the metrics of each answered request.
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/serve/http/http_server.h"
#include "request_trace.h"

namespace padless::serve::http {
namespace {

constexpr const char* kRoutePaths[] = {"/predict", "/",        "/health",
                                       "/info",    "/metrics", "/openapi.json"};

bool IsRoute(const std::string& path) {
  for (const char* p : kRoutePaths) {
    if (path == p) return true;
  }
  return false;
}

double SecondsSince(const std::optional<std::chrono::steady_clock::time_point>& start) {
  if (!start) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
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
  const int port = options_.port == 0
                       ? server_->bind_to_any_port(options_.host)
                       : (server_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.host, ":",
                                               options_.port, " (address in use, or not local)"));
  }
  port_ = port;
  // Debian's cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the
  // library): a burst of a dozen new connections overflows it, the kernel drops their SYNs, and
  // clients stall for a second or fail. Linux lets listen() on a listening socket raise it.
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  return port;
}

absl::Status HttpServer::Start() {
  if (port_ <= 0) return absl::FailedPreconditionError("Start before Bind");
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until listen has begun, so Drain could otherwise miss it and hang.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
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
  // Closes the listener; listen_after_bind returns once the pool has finished every connection
  // it accepted, i.e. every request in flight has been answered.
  if (listener_.joinable()) {
    server_->stop();
    listener_.join();
  }
  if (has_engine_.load()) engine_->Shutdown();
}

void HttpServer::InstallHooks() {
  server_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    CurrentTrace() = RequestTrace{std::chrono::steady_clock::now(), 0, ""};
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        FillErrorBody(req, res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_->set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(Internal(what), res);
      });
  server_->set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { LogAnswer(req, res); });
}

// Statuses httplib sets itself (404, 413, 400) get TEI's JSON body; a 404 on a route we serve
// with another method is a 405.
void HttpServer::FillErrorBody(const httplib::Request& req, httplib::Response& res) {
  if (res.status == 404 && IsRoute(req.path)) {
    SendError(MethodNotAllowed(req.method, req.path), res);
    res.set_header("Allow", req.path == "/predict" || req.path == "/" ? "POST" : "GET, HEAD");
  } else if (res.status == 404) {
    SendError(NotFound(req.method, req.path), res);
  } else if (res.status == 413) {
    SendError(
        TooLarge(absl::StrCat("the body is over the limit of ", options_.body_limit, " bytes")),
        res);
  } else {
    SendError({res.status, ErrorType::kValidation, "bad request"}, res);
  }
}

void HttpServer::LogAnswer(const httplib::Request& req, const httplib::Response& res) {
  RequestTrace& trace = CurrentTrace();
  const double seconds = SecondsSince(trace.start);
  const std::string route = IsRoute(req.path) ? req.path : "other";
  metrics_.RecordRequest(route, res.status, seconds);
  const LogLevel level = LevelForStatus(res.status);
  if (log_ != nullptr && log_->enabled(level)) {
    std::string line = absl::StrFormat("%s %s %d %.1fms in=%dB out=%dB inputs=%d peer=%s:%d",
                                       Printable(req.method), Printable(req.path), res.status,
                                       seconds * 1e3, req.body.size(), res.body.size(),
                                       trace.inputs, req.remote_addr, req.remote_port);
    if (!trace.error.empty() && log_->enabled(LogLevel::kDebug)) {
      absl::StrAppend(&line, " error=\"", Printable(trace.error), "\"");
    }
    log_->Write(level, line);
  }
  trace = RequestTrace{};
}

}  // namespace padless::serve::http
