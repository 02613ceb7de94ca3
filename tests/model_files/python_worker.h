// Test helper: one long-lived `python3 SCRIPT --serve` per reference script and test process, so
// that torch and transformers (4-5 s to import) are imported once per test binary instead of once
// per reference run. The script reads one JSON list of command-line arguments per line on stdin,
// runs its one-shot main on them, and answers one line on stdout: "ok", or "error: " and the
// reason (tests/model_files/serve_jobs.py). Its stderr is the test's, for diagnostics.
#ifndef PADLESS_TESTS_MODEL_FILES_PYTHON_WORKER_H_
#define PADLESS_TESTS_MODEL_FILES_PYTHON_WORKER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace padless::model_files::testing {

// Whether Python can run `script`: PADLESS_NO_PYTHON is unset, and the worker for `script` (started
// on the first call) finished its imports and said it was ready. The first answer is kept.
bool PythonWorkerReady(const std::string& script);

// Runs `script` with `args` (what its command line would take) on its worker, starting the worker
// if needed. An error says what failed: the script's own error, or a worker that died, never
// started, or gave no answer within `timeout_seconds` (the worker is then killed).
absl::Status RunPythonJob(const std::string& script, const std::vector<std::string>& args,
                          int timeout_seconds = 300);

}  // namespace padless::model_files::testing

#endif  // PADLESS_TESTS_MODEL_FILES_PYTHON_WORKER_H_
