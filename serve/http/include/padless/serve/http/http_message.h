// What passes between `padless serve`'s transport (event_server.h: sockets, parsing, deadlines)
// and its routes (the handlers of each path): one request, its response, and the way back to the
// connection it came on. The routes never see a socket, and the transport never sees JSON, so
// either can be tested without the other.
#ifndef PADLESS_SERVE_HTTP_HTTP_MESSAGE_H_
#define PADLESS_SERVE_HTTP_HTTP_MESSAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace padless::serve::http {

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string path;    // the target without its query ("/embed")
  std::optional<std::string> content_type;  // the Content-Type header, when sent
  std::string body;
};

// What the request log says of an answer besides the transport's facts; never sent.
struct LogNote {
  int64_t inputs = 0;   // the inputs the request carried (texts, pairs, lists of ids)
  int64_t tokens = -1;  // the model input tokens they became; -1: none counted
  std::string error;    // an error answer's message (logged at debug)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // more headers (TEI's x-compute-*)
  LogNote note;  // for the request log only
};

// The way back to the connection a request came on. Thread-safe. Exactly one of Send or Defer is
// called once per request; the connection reads its next request only after the response went
// out (HTTP/1.1 answers in order), and a drain waits for every request to be answered.
class Responder {
 public:
  virtual ~Responder() = default;
  // Sends `response`, from any thread.
  virtual void Send(HttpResponse response) = 0;
  // Runs `make` on one of the server's I/O threads and sends what it returns: for a response
  // that takes a while to build (JSON of many vectors) and whose inputs became ready on a thread
  // that must not be held up (the engine's completion thread).
  virtual void Defer(std::function<HttpResponse()> make) = 0;
};

// Called on an I/O thread for every complete request. Must not block: work that waits (the
// engine) answers later through the responder.
using RequestHandler =
    std::function<void(HttpRequest request, std::shared_ptr<Responder> responder)>;

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_HTTP_MESSAGE_H_
