#include "http_connection.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/strings/str_cat.h"
#include "connection_responder.h"

namespace padless::serve::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using boost::system::error_code;

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr size_t kDiscardChunk = 4096;

std::string ToString(beast::string_view s) { return std::string(s.data(), s.size()); }

int64_t Millis(std::chrono::milliseconds d) { return static_cast<int64_t>(d.count()); }

bool IsParseError(const error_code& ec) {
  return ec.category() == beast_http::make_error_code(beast_http::error::bad_method).category();
}

}  // namespace

HttpConnection::HttpConnection(EventServerCore* core, Socket socket, bool over_capacity)
    : core_(core),
      strand_(socket.get_executor()),
      socket_(std::move(socket)),
      deadline_(strand_),
      over_capacity_(over_capacity) {
  error_code ec;
  peer_ = socket_.remote_endpoint(ec);
}

void HttpConnection::PostStart() {
  asio::post(strand_, [self = shared_from_this()] { self->Start(); });
}

void HttpConnection::PostDrain() {
  asio::post(strand_, [self = shared_from_this()] { self->OnDrain(); });
}

void HttpConnection::PostClose() {
  asio::post(strand_, [self = shared_from_this()] { self->Close(); });
}

void HttpConnection::Start() {
  if (over_capacity_) {
    return AbortWith({503, ErrorType::kOverloaded,
                      absl::StrCat("the server is at its limit of ", core_->max_connections(),
                                   " open connections; try again later")});
  }
  WaitForRequest();
}

void HttpConnection::WaitForRequest() {
  if (core_->draining()) return EndAfterAnswer();
  if (buffer_.size() > 0) return ReadHeader();  // pipelined: the next request is here already
  buffer_.shrink_to_fit();                      // an idle connection holds no buffer
  state_ = State::kIdle;
  ArmDeadline(core_->options().idle_timeout);
  socket_.async_wait(Socket::wait_read,
                     [self = shared_from_this()](const error_code& ec) { self->OnReadable(ec); });
}

void HttpConnection::OnReadable(const error_code& ec) {
  if (state_ != State::kIdle) return;
  if (ec) return Close();
  ReadHeader();
}

void HttpConnection::ReadHeader() {
  state_ = State::kReadingHeader;
  exchange_ = Exchange{};
  exchange_.first_byte = Clock::now();
  parser_.emplace();
  parser_->header_limit(
      static_cast<std::uint32_t>(std::min<size_t>(core_->options().header_limit, UINT32_MAX)));
  parser_->body_limit(static_cast<std::uint64_t>(core_->options().body_limit));
  ArmDeadline(core_->options().header_timeout);
  beast_http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnHeader(ec); });
}

void HttpConnection::OnHeader(const error_code& ec) {
  if (state_ != State::kReadingHeader) return;  // a deadline or a drain answered already
  if (ec) return OnReadError(ec);
  NoteRequestLine();
  if (parser_->is_done()) return Dispatch();
  const auto& header = parser_->get();
  ReadBody(header.version() == 11 &&
           beast::iequals(header[beast_http::field::expect], "100-continue"));
}

void HttpConnection::NoteRequestLine() {
  const auto& header = parser_->get();
  exchange_.method = ToString(header.method_string());
  const beast::string_view target = header.target();
  exchange_.path = ToString(target.substr(0, target.find('?')));
  exchange_.version = header.version() == 10 ? 10 : 11;
  exchange_.keep_alive = header.keep_alive();
  exchange_.head = header.method() == beast_http::verb::head;
}

void HttpConnection::ReadBody(bool send_continue) {
  state_ = State::kReadingBody;
  ArmDeadline(core_->options().body_timeout);
  if (!send_continue) return ReadBodyBytes();
  // The client waits for this before it sends the body (curl does for bodies over 1 KB).
  asio::async_write(socket_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                    [self = shared_from_this()](const error_code& ec, size_t) {
                      if (self->state_ != State::kReadingBody) return;
                      if (ec) return self->Close();
                      self->ReadBodyBytes();
                    });
}

void HttpConnection::ReadBodyBytes() {
  beast_http::async_read(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnBody(ec); });
}

void HttpConnection::OnBody(const error_code& ec) {
  if (state_ != State::kReadingBody) return;
  if (ec) return OnReadError(ec);
  Dispatch();
}

void HttpConnection::OnReadError(const error_code& ec) {
  const EventServerOptions& options = core_->options();
  if (ec == beast_http::error::body_limit) {
    return AbortWith(
        TooLarge(absl::StrCat("Failed to buffer the request body: length limit exceeded (",
                              options.body_limit, " bytes)")));
  }
  if (ec == beast_http::error::header_limit || ec == beast_http::error::buffer_overflow) {
    return AbortWith({431, ErrorType::kValidation,
                      absl::StrCat("the request line and headers are over the limit of ",
                                   options.header_limit, " bytes")});
  }
  // The client closed (between requests, or halfway through one) or the network failed: nobody
  // is left to answer.
  if (ec == beast_http::error::end_of_stream || ec == beast_http::error::partial_message ||
      !IsParseError(ec)) {
    return Close();
  }
  AbortWith({400, ErrorType::kValidation, absl::StrCat("malformed request: ", ec.message())});
}

HttpRequest HttpConnection::TakeRequest() {
  auto& message = parser_->get();
  HttpRequest request;
  request.method = exchange_.method;
  request.path = exchange_.path;
  const auto content_type = message.find(beast_http::field::content_type);
  if (content_type != message.end()) request.content_type = ToString(content_type->value());
  request.body = std::move(message.body());
  exchange_.request_bytes = request.body.size();
  return request;
}

void HttpConnection::Dispatch() {
  DisarmDeadline();
  HttpRequest request = TakeRequest();
  parser_.reset();  // the fields are copied out; an idle connection keeps no parser
  exchange_.complete = Clock::now();
  state_ = State::kHandling;
  ++sequence_;
  auto responder =
      std::make_shared<ConnectionResponder>(weak_from_this(), sequence_, core_->gate());
  try {
    core_->handler()(std::move(request), responder);
  } catch (const std::exception& e) {
    responder->Send(ErrorResponse(Internal(absl::StrCat("the handler failed: ", e.what()))));
  } catch (...) {
    responder->Send(ErrorResponse(Internal("the handler failed")));
  }
}

void HttpConnection::Answer(uint64_t sequence, const std::function<HttpResponse()>& make) {
  if (state_ != State::kHandling || sequence != sequence_) return;
  HttpResponse response;
  try {
    response = make();
  } catch (const std::exception& e) {
    response = ErrorResponse(Internal(absl::StrCat("building the response failed: ", e.what())));
  } catch (...) {
    response = ErrorResponse(Internal("building the response failed"));
  }
  Write(std::move(response), /*transport_error=*/"");
}

void HttpConnection::Write(HttpResponse response, std::string transport_error) {
  const bool handled = state_ == State::kHandling;
  state_ = State::kWriting;
  transport_error_ = std::move(transport_error);
  note_ = std::move(response.note);
  // The transport's own errors close the connection: what follows in the stream (the rest of an
  // oversized body, a request cut short) cannot be parsed.
  keep_alive_ = handled && exchange_.keep_alive && !core_->draining();
  try {
    response_.emplace(
        ToWireResponse(std::move(response), exchange_.version, keep_alive_, exchange_.head));
  } catch (const std::exception& e) {  // a header Beast cannot hold (over 64 KB)
    response_.emplace(ToWireResponse(
        ErrorResponse(Internal(absl::StrCat("the response cannot be sent: ", e.what()))),
        exchange_.version, keep_alive_, exchange_.head));
  }
  ArmDeadline(core_->options().write_timeout);
  beast_http::async_write(
      socket_, *response_,
      [self = shared_from_this()](const error_code& ec, size_t) { self->OnWritten(ec); });
}

void HttpConnection::OnWritten(const error_code& ec) {
  if (state_ != State::kWriting) return;  // closed at its deadline, and observed then
  ObserveAnswer(/*delivered=*/!ec);
  response_.reset();
  if (ec) return Close();
  if (!keep_alive_) return EndAfterAnswer();
  WaitForRequest();
}

void HttpConnection::AbortWith(const ApiError& error) {
  if (state_ != State::kIdle && state_ != State::kReadingHeader && state_ != State::kReadingBody) {
    return;
  }
  if (state_ == State::kIdle) {  // no request line read: the last request's are not this one's
    exchange_ = Exchange{};
    exchange_.first_byte = Clock::now();
  } else if (exchange_.method.empty() && !parser_->get().method_string().empty()) {
    NoteRequestLine();  // the request line arrived, the headers did not: the observer learns it
  }
  exchange_.complete = Clock::now();
  // The read under way ends with operation_aborted, and its handler sees the state changed.
  error_code ignored;
  socket_.cancel(ignored);
  Write(ErrorResponse(error), error.message);
}

void HttpConnection::ArmDeadline(std::chrono::milliseconds timeout) {
  const uint64_t generation = ++deadline_generation_;
  deadline_.expires_after(timeout);
  deadline_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
    if (ec || generation != self->deadline_generation_) return;
    self->OnDeadline();
  });
}

void HttpConnection::DisarmDeadline() {
  ++deadline_generation_;
  deadline_.cancel();
}

void HttpConnection::OnDeadline() {
  const EventServerOptions& options = core_->options();
  switch (state_) {
    case State::kReadingHeader:
      return AbortWith({408, ErrorType::kValidation,
                        absl::StrCat("the request headers did not arrive within ",
                                     Millis(options.header_timeout), " ms")});
    case State::kReadingBody:
      return AbortWith({408, ErrorType::kValidation,
                        absl::StrCat("the request body did not arrive within ",
                                     Millis(options.body_timeout), " ms")});
    case State::kIdle:       // quiet for idle_timeout
    case State::kWriting:    // the client does not read its answer
    case State::kLingering:  // nor close after it
      return Close();
    case State::kHandling:
    case State::kClosed:
      return;
  }
}

void HttpConnection::OnDrain() {
  // A request under way, or one whose first bytes have arrived unseen yet, gets its 503.
  error_code ec;
  const bool arriving = state_ == State::kReadingHeader || state_ == State::kReadingBody ||
                        (state_ == State::kIdle && socket_.available(ec) > 0 && !ec);
  if (arriving) return AbortWith(Unavailable("the server is shutting down"));
  if (state_ == State::kIdle) return Close();
  // Otherwise answered as usual, then closed: Write and WaitForRequest see the drain.
}

void HttpConnection::EndAfterAnswer() {
  // As nginx's lingering close: only where the client may still be sending (a request cut short
  // by the transport's answer, bytes already read or waiting) would closing reset the connection
  // under the answer; a client that sent its request whole and was told `Connection: close` has
  // nothing more to send.
  error_code ec;
  const bool may_send_more =
      !transport_error_.empty() || buffer_.size() > 0 || (socket_.available(ec) > 0 && !ec);
  if (may_send_more) return Linger();
  socket_.shutdown(Socket::shutdown_send, ec);
  Close();
}

void HttpConnection::Linger() {
  state_ = State::kLingering;
  error_code ignored;
  socket_.shutdown(Socket::shutdown_send, ignored);  // the FIN follows the answer
  ArmDeadline(core_->options().linger_timeout);
  DiscardUntilClosed();
}

void HttpConnection::DiscardUntilClosed() {
  buffer_.consume(buffer_.size());
  socket_.async_read_some(buffer_.prepare(kDiscardChunk),
                          [self = shared_from_this()](const error_code& ec, size_t) {
                            if (self->state_ != State::kLingering) return;
                            if (ec) return self->Close();  // the client closed: done
                            self->DiscardUntilClosed();
                          });
}

void HttpConnection::Close() {
  if (state_ == State::kClosed) return;
  if (state_ == State::kWriting) ObserveAnswer(/*delivered=*/false);
  state_ = State::kClosed;
  DisarmDeadline();
  error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  core_->Unregister(this, over_capacity_);
}

void HttpConnection::ObserveAnswer(bool delivered) {
  AnsweredRequest answer;
  answer.method = exchange_.method;
  answer.path = exchange_.path;
  answer.status = response_ ? static_cast<int>(response_->result_int()) : 0;
  answer.request_bytes = exchange_.request_bytes;
  answer.response_bytes = response_ ? response_->body().size() : 0;
  const Clock::time_point now = Clock::now();
  answer.read_time = exchange_.complete - exchange_.first_byte;
  answer.answer_time = now - exchange_.complete;
  answer.peer = absl::StrCat(peer_.address().to_string(), ":", peer_.port());
  answer.error = transport_error_;
  answer.note = note_;
  answer.delivered = delivered;
  core_->Observe(answer);
}

}  // namespace padless::serve::http
