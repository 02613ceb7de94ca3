// One client connection of EventServer (event_server.h): a state machine on the connection's
// strand that reads a request, hands it to the handler, writes the answer, and waits for the next,
// under the deadline of each phase. Private to serve/http.
//
//   idle ─(a byte arrives)─► reading headers ─► reading body ─► handling ─(Answer)─► writing ─┐
//     ▲  (idle_timeout: close)  (header_timeout: 408)  (body_timeout: 408)    (write_timeout:   │
//     │                                                                        close)          │
//     └──────────────────── keep-alive (bytes already read: straight to headers) ◄────────────┘
//   A response that ends the connection, where the client may still be sending, goes on to
//   lingering: the sending side is shut, the rest of the client's bytes are read and dropped until
//   it closes or linger_timeout passes, so that the close does not reset a connection whose client
//   has not read the answer yet.
//
// One request at a time: nothing is read while a request is handled or its answer written, so the
// memory a connection holds is one request, and pipelined requests are answered in order. Every
// member is touched on the strand only; the entry points from other threads post onto it.
#ifndef PADLESS_SERVE_HTTP_HTTP_CONNECTION_H_
#define PADLESS_SERVE_HTTP_HTTP_CONNECTION_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "event_server_core.h"
#include "padless/serve/http/api_error.h"
#include "padless/serve/http/http_message.h"
#include "wire_response.h"

namespace padless::serve::http {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;

  // `over_capacity`: the connection is only answered 503 and closed.
  HttpConnection(EventServerCore* core, Socket socket, bool over_capacity);

  const Strand& strand() const { return strand_; }

  // From any thread: each posts its work onto the strand.
  void PostStart();
  void PostDrain();  // a drain began: close if idle, 503 if a request is still arriving
  void PostClose();  // close now, answered or not (a drain that ran out of time)

  // On the strand (ConnectionResponder posts it): answers the request numbered `sequence` with
  // what `make` returns, unless that request is no longer the one waiting for its answer.
  void Answer(uint64_t sequence, const std::function<HttpResponse()>& make);

 private:
  enum class State {
    kIdle,
    kReadingHeader,
    kReadingBody,
    kHandling,
    kWriting,
    kLingering,
    kClosed
  };
  using Clock = std::chrono::steady_clock;
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  // The request being answered, for the observer.
  struct Exchange {
    std::string method;
    std::string path;
    size_t request_bytes = 0;
    Clock::time_point first_byte;
    Clock::time_point complete;  // read whole, or cut short by the transport's error answer
    unsigned version = 11;       // 10 or 11
    bool keep_alive = false;     // what the request asked for
    bool head = false;
  };

  void Start();
  void WaitForRequest();
  void OnReadable(const boost::system::error_code& ec);
  void ReadHeader();
  void OnHeader(const boost::system::error_code& ec);
  void ReadBody(bool send_continue);
  void ReadBodyBytes();
  void OnBody(const boost::system::error_code& ec);
  void OnReadError(const boost::system::error_code& ec);
  void NoteRequestLine();
  void Dispatch();
  HttpRequest TakeRequest();
  // Writes `response`; `transport_error`: the transport's own error answer (closes afterwards).
  void Write(HttpResponse response, std::string transport_error);
  void OnWritten(const boost::system::error_code& ec);
  // Answers `error` to a request still arriving (or to none yet), then closes.
  void AbortWith(const ApiError& error);
  void ArmDeadline(std::chrono::milliseconds timeout);
  void DisarmDeadline();
  void OnDeadline();
  void OnDrain();
  // After an answer that ends the connection: Linger where the client may still be sending, else
  // Close.
  void EndAfterAnswer();
  void Linger();
  void DiscardUntilClosed();
  void Close();
  void ObserveAnswer(bool delivered);

  EventServerCore* const core_;
  const Strand strand_;
  Socket socket_;
  boost::asio::ip::tcp::endpoint peer_;  // read at accept: a closed socket no longer has it
  boost::asio::steady_timer deadline_;
  uint64_t deadline_generation_ = 0;  // a fired deadline of an earlier phase is ignored
  const bool over_capacity_;
  State state_ = State::kIdle;
  boost::beast::flat_buffer buffer_;      // read but not yet parsed (pipelined bytes too)
  std::optional<Parser> parser_;          // while a request is read
  std::optional<WireResponse> response_;  // while an answer is written
  uint64_t sequence_ = 0;                 // the request being answered (Answer's check)
  Exchange exchange_;
  std::string transport_error_;  // of the answer being written
  LogNote note_;                 // of the answer being written
  bool keep_alive_ = false;      // after the answer being written
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_HTTP_CONNECTION_H_
