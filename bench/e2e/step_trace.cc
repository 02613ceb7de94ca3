#include "step_trace.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>

#include "absl/strings/str_cat.h"

namespace padless::bench::e2e {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> Activities(bool host) {
  std::set<ActivityType> a;
  if (host) a.insert(ActivityType::CPU);
#ifdef PADLESS_TORCH_HAS_CUDA
  a.insert(ActivityType::CUDA);
#endif
  return a;
}

}  // namespace

StepTrace::~StepTrace() {
  if (!recording_) return;
  try {
    profiler::disableProfiler();
  } catch (const c10::Error&) {
    // Discarding a recording that failed to stop leaves nothing to clean up.
  }
}

absl::Status StepTrace::Start() {
  const std::set<ActivityType> activities = Activities(record_host_);
  if (activities.empty()) {
    return absl::FailedPreconditionError(
        "profiler: a trace without host operators records GPU work only, and this build has no "
        "CUDA");
  }
  try {
    const ProfilerConfig config(ProfilerState::KINETO);
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("profiler: ", e.what_without_backtrace()));
  }
  recording_ = true;
  return absl::OkStatus();
}

absl::Status StepTrace::Save(const std::string& path) {
  if (!recording_) return absl::FailedPreconditionError("profiler: Save without Start");
  recording_ = false;
  try {
    profiler::disableProfiler()->save(path);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("profiler: writing ", path, ": ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

}  // namespace padless::bench::e2e
