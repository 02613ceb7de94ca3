// SIGTERM and SIGINT as a drain request, without a signal handler: the signals are blocked in
// every thread (the mask is inherited, so block them before any thread starts: the HTTP pool,
// the engine's workers, LibTorch's), and one thread takes them with sigwait. The drain then runs
// as ordinary code on that thread (closing sockets and joining threads, which no handler may do).
#ifndef PADLESS_SERVE_HTTP_SHUTDOWN_SIGNALS_H_
#define PADLESS_SERVE_HTTP_SHUTDOWN_SIGNALS_H_

#include "absl/status/status.h"

namespace padless::serve::http {

// Blocks SIGTERM and SIGINT in the calling thread and in the threads it starts afterwards.
absl::Status BlockShutdownSignals();

// Ignores SIGPIPE: Debian's libcpp-httplib sends without MSG_NOSIGNAL, so a client that closes
// its connection before the answer is written would otherwise kill the server.
void IgnoreBrokenPipe();

// Waits for SIGTERM or SIGINT (blocked by BlockShutdownSignals); returns the signal number.
int WaitForShutdownSignal();

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_SHUTDOWN_SIGNALS_H_
