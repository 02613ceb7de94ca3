// EventServer's accept loop and its registry of connections: the cap on open connections (a
// connection over it is answered 503, not left in the backlog), and the file descriptors it
// leaves room for.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include <boost/asio/ip/tcp.hpp>

#include "event_server_core.h"
#include "http_connection.h"

namespace padless::serve::http {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// Descriptors left to the rest of the process (model files, logs, the engine) below
// RLIMIT_NOFILE.
constexpr int64_t kReservedDescriptors = 64;
// Connections being answered 503 at once (each lingers up to linger_timeout); past this, one over
// the cap is closed unanswered, so that a flood cannot spend every descriptor on refusals.
constexpr int64_t kMaxRejecting = 256;
// After a failed accept (EMFILE, ENFILE, ENOBUFS): a pause instead of a busy loop.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};

}  // namespace

void EventServerCore::SetConnectionCaps() {
  int64_t descriptors = INT64_MAX;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    descriptors = static_cast<int64_t>(limit.rlim_cur);
  }
  const int64_t available = std::max<int64_t>(descriptors - kReservedDescriptors, 2);
  const int64_t rejecting = std::clamp<int64_t>(available / 8, 1, kMaxRejecting);
  max_rejecting_ = static_cast<int>(rejecting);
  max_connections_ = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(options_.max_connections, available - rejecting), 1, INT32_MAX));
}

void EventServerCore::Accept() {
  if (!acceptor_.is_open()) return;
  // Each connection gets a strand of its own: its handlers never run at once, on any I/O thread.
  const Strand strand = asio::make_strand(io_);
  acceptor_.async_accept(strand, [this](const error_code& ec, HttpConnection::Socket socket) {
    if (!acceptor_.is_open()) return;  // closed by Drain
    if (ec) return RetryAcceptSoon();
    OnAccepted(std::move(socket));
    Accept();
  });
}

void EventServerCore::RetryAcceptSoon() {
  accept_retry_.expires_after(kAcceptRetryDelay);
  accept_retry_.async_wait([this](const error_code& ec) {
    if (!ec) Accept();
  });
}

void EventServerCore::OnAccepted(HttpConnection::Socket socket) {
  error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  std::shared_ptr<HttpConnection> connection;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining()) return;  // the socket closes as it goes out of scope
    const bool over_capacity = served_.load(std::memory_order_relaxed) >= max_connections_;
    if (over_capacity) {
      rejected_total_.fetch_add(1, std::memory_order_relaxed);
      if (rejecting_ >= max_rejecting_) return;
      ++rejecting_;
    } else {
      served_.fetch_add(1, std::memory_order_relaxed);
    }
    connection = std::make_shared<HttpConnection>(this, std::move(socket), over_capacity);
    connections_.emplace(connection.get(), connection);
  }
  connection->PostStart();
}

void EventServerCore::Unregister(const HttpConnection* connection, bool over_capacity) {
  std::shared_ptr<HttpConnection> owned;  // released after the lock (declared before it)
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  owned = std::move(it->second);
  connections_.erase(it);
  if (over_capacity) {
    --rejecting_;
  } else {
    served_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (connections_.empty()) registry_empty_.notify_all();
}

void EventServerCore::Observe(const AnsweredRequest& answer) const {
  if (!observer_) return;
  try {
    observer_(answer);
  } catch (...) {  // the observer must not throw; a log line is not worth the connection
  }
}

}  // namespace padless::serve::http
