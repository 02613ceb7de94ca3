#include "padless/serve/http/shutdown_signals.h"

#include <pthread.h>
#include <signal.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

sigset_t ShutdownSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

absl::Status BlockShutdownSignals() {
  const sigset_t set = ShutdownSet();
  if (int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(rc)));
  }
  return absl::OkStatus();
}

void IgnoreBrokenPipe() { signal(SIGPIPE, SIG_IGN); }

int WaitForShutdownSignal() {
  const sigset_t set = ShutdownSet();
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  return signal;
}

}  // namespace padless::serve::http
