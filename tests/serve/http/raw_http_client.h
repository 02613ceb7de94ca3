// A minimal HTTP/1.1 client on a raw POSIX socket, for tests of the transport (event_server.h)
// that must control every byte: half a request line, a body that never comes, pipelining, a
// thousand idle connections. No library client allows that, and none is needed for the rest.
#ifndef PADLESS_TESTS_SERVE_HTTP_RAW_HTTP_CLIENT_H_
#define PADLESS_TESTS_SERVE_HTTP_RAW_HTTP_CLIENT_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace padless::serve::http {

struct RawReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  // The header's value, or "" when absent.
  std::string Header(const std::string& lower_case_name) const;
};

class RawHttpClient {
 public:
  // Connects to 127.0.0.1:port (blocking); connected() says whether it worked.
  explicit RawHttpClient(int port);
  ~RawHttpClient();
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Writes all of `data`; false when the connection failed.
  bool Send(absl::string_view data);
  // Reads one response within `timeout`, framed by Content-Length (no body for HEAD, 1xx, 204 and
  // 304); none on a timeout, a close before it is whole, or a malformed one.
  std::optional<RawReply> Read(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                               bool head = false);
  // True when the server closed the connection (end of stream or reset) within `timeout`; bytes
  // that arrive before are kept for Read.
  bool ClosedWithin(std::chrono::milliseconds timeout);
  void Close();

 private:
  // Reads what has arrived into buffer_ by `deadline`; false at end of stream, reset or timeout.
  bool Fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  bool closed_by_peer_ = false;
};

// Requests as a client writes them ("Host" included; `extra_headers` lines end in "\r\n").
std::string GetRequest(absl::string_view path, absl::string_view extra_headers = "");
std::string PostRequest(absl::string_view path, absl::string_view body,
                        absl::string_view content_type = "application/json",
                        absl::string_view extra_headers = "");

}  // namespace padless::serve::http

#endif  // PADLESS_TESTS_SERVE_HTTP_RAW_HTTP_CLIENT_H_
