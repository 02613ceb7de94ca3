// What the server's log line and metrics need to know about the request a handler thread is
// answering, beyond httplib's Request and Response: when it was read, how many inputs it
// classified, and why it failed. cpp-httplib answers each connection's requests one after another
// on one pool thread, so a thread_local holds the current request's trace from the pre-routing
// hook to the logger hook without any lookup. Private to serve/http.
#ifndef PADLESS_SERVE_HTTP_REQUEST_TRACE_H_
#define PADLESS_SERVE_HTTP_REQUEST_TRACE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace padless::serve::http {

struct RequestTrace {
  // Empty for a request that never reached routing (e.g. a body over the limit).
  std::optional<std::chrono::steady_clock::time_point> start;
  int64_t inputs = 0;
  std::string error;  // the error message of a failed request
};

// The calling thread's current trace.
RequestTrace& CurrentTrace();

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_REQUEST_TRACE_H_
