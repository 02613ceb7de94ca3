// A Prometheus histogram: cumulative bucket counts over fixed upper bounds, a sum and a count.
// Thread-safe; Observe is a short critical section, cheap enough for the engine's batch observer
// (which runs on the engine's completion thread and must be quick).
#ifndef PADLESS_SERVE_HTTP_HISTOGRAM_H_
#define PADLESS_SERVE_HTTP_HISTOGRAM_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace padless::serve::http {

class Histogram {
 public:
  // `upper_bounds` ascending; +Inf is implied.
  explicit Histogram(std::vector<double> upper_bounds);

  void Observe(double value);

  // The _bucket, _sum and _count lines of `name`; `labels` is empty or e.g. `route="/predict"`
  // (without braces). No HELP/TYPE lines: a labelled family writes them once.
  void Render(absl::string_view name, absl::string_view labels, std::string* out) const;

  uint64_t count() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Upper bounds `first`, `first * factor`, ... (`n` of them).
std::vector<double> ExponentialBuckets(double first, double factor, int n);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_HISTOGRAM_H_
