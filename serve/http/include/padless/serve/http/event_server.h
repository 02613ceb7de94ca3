// `padless serve`'s transport: HTTP/1.1 on Boost.Beast over Asio's event loop. A few I/O threads
// serve every connection, so an open connection costs its socket and a few KB of parser state,
// not a thread: idle or slow clients cannot stall the others. The transport reads requests,
// enforces the deadlines and limits of EventServerOptions, answers its own errors with TEI's JSON
// error body (api_error.h), and hands each complete request to a RequestHandler (http_message.h);
// it knows no route. Its own answers, each of which closes the connection:
//   400  a malformed request (request line, headers, framing)
//   408  the headers or the body did not arrive by their deadline
//   413  a body over body_limit; 431 headers over header_limit
//   500  the handler threw, or dropped its Responder without answering (the connection stays open)
//   503  a new connection over max_connections (answered at once), or a request that was still
//        arriving when Drain began
// Keep-alive follows HTTP/1.1 (`Connection: close` and HTTP/1.0 honoured). A connection reads and
// answers its requests one at a time, so pipelined requests are answered in order. Accepted
// sockets get TCP_NODELAY: a response sent while the previous one (or a 100 Continue) is not yet
// acknowledged would otherwise wait up to 40 ms for the client's delayed ACK.
//
// Lifecycle: Bind (the port is known), Start (the I/O threads run), Drain (below; also from the
// destructor). The handler and the observer run on the I/O threads; after Drain returns neither is
// called again.
#ifndef PADLESS_SERVE_HTTP_EVENT_SERVER_H_
#define PADLESS_SERVE_HTTP_EVENT_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/serve/http/http_message.h"

namespace padless::serve::http {

struct EventServerOptions {
  std::string host = "127.0.0.1";   // an address or a name that resolves to one
  int port = 8080;                  // 0: a free port, chosen by the kernel
  int io_threads = 2;               // threads running the event loop (at least 1)
  size_t body_limit = 2'000'000;    // bytes; TEI's --payload-limit default (413 above)
  size_t header_limit = 16 * 1024;  // the request line and headers, bytes (431 above)
  // Connections served at once; a new one above the cap is answered 503 and closed. Bind lowers it
  // to what RLIMIT_NOFILE leaves room for (max_connections()), so that the cap, not a failing
  // accept, is what a client over it meets.
  int max_connections = 32'768;
  // From a request's first byte to the end of its headers; then to the end of its body. Past
  // either the request is answered 408 and the connection closed (a client that trickles bytes
  // holds a connection no longer than this).
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  // A connection with no request under way (new, or between keep-alive requests) is closed after
  // this long.
  std::chrono::milliseconds idle_timeout{60'000};
  // A response the client does not read by then is abandoned and the connection closed.
  std::chrono::milliseconds write_timeout{30'000};
  // After a response that closes the connection: how long the unread rest of the client's data is
  // read and discarded, so that closing does not reset the connection before the client has read
  // the response (a 413 sent before the body arrived).
  std::chrono::milliseconds linger_timeout{2'000};
  // How long Drain waits for the requests in flight to be answered before it closes their
  // connections anyway.
  std::chrono::milliseconds drain_timeout{30'000};
};

// What the observer learns of each answered request: enough for the request log and the metrics.
struct AnsweredRequest {
  std::string method;  // as sent; empty when the transport answered before a request line arrived
  std::string path;    // the target without its query; empty likewise
  int status = 0;
  size_t request_bytes = 0;   // the request body
  size_t response_bytes = 0;  // the response body
  // From the request's first byte to its last (or to the transport's error answer), and from
  // there until the response was written: the handler's time plus the write.
  std::chrono::steady_clock::duration read_time{};
  std::chrono::steady_clock::duration answer_time{};
  std::string peer;        // the client's "address:port"
  std::string error;       // the message of an error the transport answered itself; else empty
  bool delivered = false;  // false: the client left, or did not read, before the response was out
  LogNote note;            // the handler's HttpResponse::note (empty for the transport's answers)
};

// Called on an I/O thread once per answered request, after its response was written (or failed
// to be). Must not block, nor throw.
using AnswerObserver = std::function<void(const AnsweredRequest&)>;

class EventServerCore;

class EventServer {
 public:
  EventServer(EventServerOptions options, RequestHandler handler, AnswerObserver observer = {});
  ~EventServer();  // Drain()
  EventServer(const EventServer&) = delete;
  EventServer& operator=(const EventServer&) = delete;

  // Resolves the host and listens (SO_REUSEADDR, not SO_REUSEPORT: a port in use is an error, not
  // a second server sharing it); the port, the chosen one for port 0. Once.
  absl::StatusOr<int> Bind();
  // Starts the I/O threads and accepting (after Bind). Once.
  absl::Status Start();
  // Stops accepting and closes the listener (new connections are refused), answers every request
  // already read (the handler's answer, with `Connection: close`), answers 503 to one still
  // arriving, closes idle connections, then joins the I/O threads. Connections still unanswered
  // after drain_timeout are closed. Idempotent; from any thread but an I/O thread (a handler).
  void Drain();

  int port() const;             // after Bind
  int max_connections() const;  // the cap in effect (after Bind)
  // Connections open now, those answered 503 over the cap (not counted in open_connections).
  int64_t open_connections() const;
  int64_t rejected_connections() const;

 private:
  std::unique_ptr<EventServerCore> core_;
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_EVENT_SERVER_H_
