#include "padless/serve/http/histogram.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace padless::serve::http {
namespace {

// Prometheus reads Go's float syntax; %g-style shortest text is fine, +Inf is spelled out.
std::string PromNumber(double v) { return absl::StrCat(v); }

std::string WithLabels(absl::string_view labels, absl::string_view more) {
  if (labels.empty()) return absl::StrCat("{", more, "}");
  return absl::StrCat("{", labels, ",", more, "}");
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::Render(absl::string_view name, absl::string_view labels, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? PromNumber(bounds_[i]) : "+Inf";
    absl::StrAppend(out, name, "_bucket", WithLabels(labels, absl::StrCat("le=\"", le, "\"")), " ",
                    cumulative, "\n");
  }
  const std::string braces = labels.empty() ? "" : absl::StrCat("{", labels, "}");
  absl::StrAppend(out, name, "_sum", braces, " ", PromNumber(sum_), "\n");
  absl::StrAppend(out, name, "_count", braces, " ", count_, "\n");
}

std::vector<double> ExponentialBuckets(double first, double factor, int n) {
  std::vector<double> bounds;
  for (double b = first; static_cast<int>(bounds.size()) < n; b *= factor) bounds.push_back(b);
  return bounds;
}

}  // namespace padless::serve::http
