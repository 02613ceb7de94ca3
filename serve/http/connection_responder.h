// The Responder (http_message.h) of one request on an EventServer connection: its first Send or
// Defer posts the answer onto the connection's strand; a Responder destroyed without either
// answers 500, so that a lost request never holds its connection forever. Private to serve/http.
//
// A Responder may outlive its connection (a client that left, a drain that ran out of time) and
// the server itself (the engine's completion thread holds it). So it holds the connection weakly,
// and posts only through the server's gate: open while the I/O threads may run, closed (under the
// gate's lock) before the server's io_context goes, after which an answer is dropped.
#ifndef PADLESS_SERVE_HTTP_CONNECTION_RESPONDER_H_
#define PADLESS_SERVE_HTTP_CONNECTION_RESPONDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>

#include "padless/serve/http/http_message.h"

namespace padless::serve::http {

class HttpConnection;

struct ResponderGate {
  std::shared_mutex mu;
  bool open = true;  // false once the server's I/O threads are gone
};

class ConnectionResponder final : public Responder {
 public:
  ConnectionResponder(std::weak_ptr<HttpConnection> connection, uint64_t sequence,
                      std::shared_ptr<ResponderGate> gate);
  ~ConnectionResponder() override;  // 500 when neither Send nor Defer was called

  // Only the first of Send and Defer counts; a later call is ignored.
  void Send(HttpResponse response) override;
  void Defer(std::function<HttpResponse()> make) override;

 private:
  // Claims the one answer; false when it was given already.
  bool Claim();
  void Deliver(std::function<HttpResponse()> make);

  const std::weak_ptr<HttpConnection> connection_;
  const uint64_t sequence_;
  const std::shared_ptr<ResponderGate> gate_;
  std::atomic<bool> answered_{false};
};

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_CONNECTION_RESPONDER_H_
