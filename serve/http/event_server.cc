// EventServer's lifecycle: Bind, Start (the I/O threads), Drain. The accept loop and the registry
// of connections are event_server_accept.cc; a connection's state machine is http_connection.cc.
#include "padless/serve/http/event_server.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "connection_responder.h"
#include "event_server_core.h"
#include "http_connection.h"

namespace padless::serve::http {
namespace {

namespace asio = boost::asio;
using boost::asio::ip::tcp;
using boost::system::error_code;

// After Drain's drain_timeout: how long the connections it then closes may take to go.
constexpr std::chrono::milliseconds kForcedCloseWait{2'000};

absl::StatusOr<tcp::endpoint> Resolve(asio::io_context& io, const std::string& host, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port ", port, " is not in 0-65535"));
  }
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, static_cast<unsigned short>(port));
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve the host '", host, "': ", ec ? ec.message() : "no address"));
  }
  return results.begin()->endpoint();
}

}  // namespace

EventServer::EventServer(EventServerOptions options, RequestHandler handler,
                         AnswerObserver observer)
    : core_(std::make_unique<EventServerCore>(std::move(options), std::move(handler),
                                              std::move(observer))) {}

EventServer::~EventServer() = default;  // the core drains

absl::StatusOr<int> EventServer::Bind() { return core_->Bind(); }
absl::Status EventServer::Start() { return core_->Start(); }
void EventServer::Drain() { core_->Drain(); }
int EventServer::port() const { return core_->port(); }
int EventServer::max_connections() const { return core_->max_connections(); }
int64_t EventServer::open_connections() const { return core_->open_connections(); }
int64_t EventServer::rejected_connections() const { return core_->rejected_connections(); }

EventServerCore::EventServerCore(EventServerOptions options, RequestHandler handler,
                                 AnswerObserver observer)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      observer_(std::move(observer)),
      io_(std::max(1, options_.io_threads)),
      acceptor_strand_(asio::make_strand(io_)),
      acceptor_(acceptor_strand_),
      accept_retry_(acceptor_strand_),
      gate_(std::make_shared<ResponderGate>()) {}

EventServerCore::~EventServerCore() { Drain(); }

absl::StatusOr<int> EventServerCore::Bind() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (drained_) return absl::FailedPreconditionError("Bind after Drain");
  if (bound_) return absl::FailedPreconditionError("Bind called twice");
  absl::StatusOr<tcp::endpoint> endpoint = Resolve(io_, options_.host, options_.port);
  if (!endpoint.ok()) return endpoint.status();
  error_code ec;
  acceptor_.open(endpoint->protocol(), ec);
  // SO_REUSEADDR: a restart may bind while the last run's connections linger in TIME_WAIT. Not
  // SO_REUSEPORT, under which a second server would share a port in use without an error.
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(*endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) port_ = acceptor_.local_endpoint(ec).port();
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.host, ":", options_.port, ": ", ec.message()));
  }
  SetConnectionCaps();
  bound_ = true;
  return port_;
}

absl::Status EventServerCore::Start() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (drained_) return absl::FailedPreconditionError("Start after Drain");
  if (!bound_) return absl::FailedPreconditionError("Start before Bind");
  if (!threads_.empty()) return absl::FailedPreconditionError("Start called twice");
  work_.emplace(io_.get_executor());
  asio::post(acceptor_strand_, [this] { Accept(); });
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] { RunIoThread(); });
  }
  return absl::OkStatus();
}

void EventServerCore::RunIoThread() {
  // Every handler of ours catches what it can throw; this keeps a thread serving should one
  // escape anyway (an allocation failure), rather than ending the process.
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "padless serve: I/O thread: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "padless serve: I/O thread: unknown exception\n");
    }
  }
}

void EventServerCore::Drain() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (drained_) return;
  drained_ = true;
  std::vector<std::shared_ptr<HttpConnection>> open = BeginDrain();
  CloseListener();
  for (const std::shared_ptr<HttpConnection>& connection : open) connection->PostDrain();
  open.clear();  // the registry owns them; a closed one goes now
  if (!WaitUntilClosed(options_.drain_timeout)) {
    std::vector<std::shared_ptr<HttpConnection>> late = BeginDrain();
    for (const std::shared_ptr<HttpConnection>& connection : late) connection->PostClose();
    late.clear();
    WaitUntilClosed(kForcedCloseWait);
  }
  StopThreads();
  // From now on a Responder's answer is dropped instead of posted to a context about to go.
  std::unique_lock<std::shared_mutex> gate_lock(gate_->mu);
  gate_->open = false;
}

std::vector<std::shared_ptr<HttpConnection>> EventServerCore::BeginDrain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_.store(true, std::memory_order_release);  // under mu_: OnAccepted checks it there
  std::vector<std::shared_ptr<HttpConnection>> open;
  open.reserve(connections_.size());
  for (const auto& entry : connections_) open.push_back(entry.second);
  return open;
}

void EventServerCore::CloseListener() {
  const auto close = [this] {
    error_code ignored;
    acceptor_.close(ignored);  // the pending accept ends with operation_aborted
    accept_retry_.cancel();
  };
  if (threads_.empty()) return close();
  std::promise<void> closed;
  asio::post(acceptor_strand_, [&close, &closed] {
    close();
    closed.set_value();
  });
  closed.get_future().wait();
}

bool EventServerCore::WaitUntilClosed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return registry_empty_.wait_for(lock, timeout, [this] { return connections_.empty(); });
}

void EventServerCore::StopThreads() {
  work_.reset();
  io_.stop();  // what is still queued (an answer for a closed connection) is dropped
  for (std::thread& thread : threads_) thread.join();
}

}  // namespace padless::serve::http
