// EventServer's insides (event_server.h), and what its connections (http_connection.h) share: the
// options, the handler and the observer, whether a drain has begun, and the registry of open
// connections, which owns them and which Drain walks. Private to serve/http: it keeps Boost out of
// event_server.h, whose includers should not compile Asio.
#ifndef PADLESS_SERVE_HTTP_EVENT_SERVER_CORE_H_
#define PADLESS_SERVE_HTTP_EVENT_SERVER_CORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/serve/http/event_server.h"
#include "padless/serve/http/http_message.h"

namespace padless::serve::http {

class HttpConnection;
struct ResponderGate;

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

class EventServerCore {
 public:
  EventServerCore(EventServerOptions options, RequestHandler handler, AnswerObserver observer);
  ~EventServerCore();  // Drain()

  // EventServer's API (event_server.cc).
  absl::StatusOr<int> Bind();
  absl::Status Start();
  void Drain();
  int port() const { return port_; }
  int max_connections() const { return max_connections_; }
  int64_t open_connections() const { return served_.load(std::memory_order_relaxed); }
  int64_t rejected_connections() const { return rejected_total_.load(std::memory_order_relaxed); }

  // For the connections, from their strands.
  const EventServerOptions& options() const { return options_; }
  const RequestHandler& handler() const { return handler_; }
  const std::shared_ptr<ResponderGate>& gate() const { return gate_; }
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  void Observe(const AnsweredRequest& answer) const;
  // A connection leaves the registry as it closes (once).
  void Unregister(const HttpConnection* connection, bool over_capacity);

 private:
  // The accept loop, on acceptor_strand_ (event_server_accept.cc).
  void Accept();
  void OnAccepted(boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand> socket);
  void RetryAcceptSoon();
  // The caps of Bind: max_connections_ and max_rejecting_, within RLIMIT_NOFILE.
  void SetConnectionCaps();
  void RunIoThread();
  // Drain's steps.
  std::vector<std::shared_ptr<HttpConnection>> BeginDrain();
  void CloseListener();
  bool WaitUntilClosed(std::chrono::milliseconds timeout);
  void StopThreads();

  const EventServerOptions options_;
  const RequestHandler handler_;
  const AnswerObserver observer_;
  // First, so destroyed last: the handlers still queued in it, and the connections they hold,
  // go before the context their sockets belong to.
  boost::asio::io_context io_;
  const Strand acceptor_strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;  // after a failed accept (EMFILE)
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  const std::shared_ptr<ResponderGate> gate_;
  std::atomic<bool> draining_{false};
  int port_ = -1;
  int max_connections_ = 0;
  int max_rejecting_ = 0;  // connections being answered 503 at once; more are closed unanswered

  mutable std::mutex mu_;  // the registry and rejecting_
  std::condition_variable registry_empty_;
  std::unordered_map<const HttpConnection*, std::shared_ptr<HttpConnection>> connections_;
  int rejecting_ = 0;
  std::atomic<int64_t> served_{0};  // written under mu_
  std::atomic<int64_t> rejected_total_{0};

  std::mutex drain_mu_;  // Bind, Start and Drain against each other
  bool bound_ = false;
  bool drained_ = false;
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EVENT_SERVER_CORE_H_
