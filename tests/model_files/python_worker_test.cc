// The Python reference worker (python_worker.h, serve_jobs.py) on stand-in scripts that import
// nothing heavy: a job's error comes back as the reason and leaves the worker running; a worker
// that dies or hangs fails its job (the hung one within its timeout) and every later one, never
// hanging the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python_worker.h"

namespace padless::model_files::python_worker_test {
namespace {

using ::testing::HasSubstr;
using testing::PythonWorkerReady;
using testing::RunPythonJob;

// A script in the test's temp dir (named `name`) whose jobs do what their one argument says.
std::string StandInScript(const std::string& name) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "python_worker_", ::getpid(), "_", name, ".py");
  std::ofstream(path) << "import os, sys, time\n"
                      << "sys.path.insert(0, '" << PADLESS_SOURCE_DIR << "/tests/model_files')\n"
                      << "from serve_jobs import serve\n"
                      << "def main(argv):\n"
                      << "    print('stdout noise, not a reply')\n"
                      << "    if argv == ['fail']: raise ValueError('bad input')\n"
                      << "    if argv == ['refuse']: raise SystemExit('refused: no weights')\n"
                      << "    if argv == ['usage']: raise SystemExit(2)\n"
                      << "    if argv == ['die']: os._exit(3)\n"
                      << "    if argv == ['hang']: time.sleep(600)\n"
                      << "serve(main)\n";
  return path;
}

TEST(PythonWorkerTest, ErrorsComeBackAndADeadOrHungWorkerFailsItsJobs) {
  const std::string script = StandInScript("errors");
  if (std::getenv("PADLESS_NO_PYTHON") != nullptr) {
    EXPECT_FALSE(PythonWorkerReady(script));
    EXPECT_EQ(RunPythonJob(script, {"ok"}).code(), absl::StatusCode::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(PythonWorkerReady(script));
  EXPECT_TRUE(RunPythonJob(script, {"ok"}).ok());
  absl::Status failed = RunPythonJob(script, {"fail"});
  EXPECT_THAT(std::string(failed.message()), HasSubstr("ValueError: bad input"));
  EXPECT_THAT(std::string(failed.message()), HasSubstr(script + " fail"));
  failed = RunPythonJob(script, {"refuse"});
  EXPECT_THAT(std::string(failed.message()), HasSubstr("error: refused: no weights"));
  failed = RunPythonJob(script, {"usage"});
  EXPECT_THAT(std::string(failed.message()), HasSubstr("exit status 2"));
  EXPECT_TRUE(RunPythonJob(script, {"ok"}).ok()) << "the worker outlives its jobs' errors";

  const absl::Status hung = RunPythonJob(script, {"hang"}, /*timeout_seconds=*/1);
  EXPECT_EQ(hung.code(), absl::StatusCode::kDeadlineExceeded) << hung;
  EXPECT_THAT(std::string(hung.message()), HasSubstr("no answer within 1 s during"));
  EXPECT_EQ(RunPythonJob(script, {"ok"}).code(), absl::StatusCode::kFailedPrecondition);

  const std::string dying = StandInScript("dies");
  ASSERT_TRUE(PythonWorkerReady(dying));
  const absl::Status died = RunPythonJob(dying, {"die"});
  EXPECT_EQ(died.code(), absl::StatusCode::kUnavailable) << died;
  EXPECT_THAT(std::string(died.message()), HasSubstr("exit status 3"));
  const absl::Status later = RunPythonJob(dying, {"ok"});
  EXPECT_THAT(std::string(later.message()), HasSubstr("the Python worker is gone"));

  EXPECT_FALSE(PythonWorkerReady(StandInScript("missing") + ".absent"));
}

}  // namespace
}  // namespace padless::model_files::python_worker_test
