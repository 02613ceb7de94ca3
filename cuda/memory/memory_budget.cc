#include "padless/cuda/memory/memory_budget.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace padless::cuda {

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  static constexpr struct {
    const char* suffix;
    double factor;
  } kUnits[] = {
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"kb", 1e3},     {"mb", 1e6},        {"gb", 1e9},           {"tb", 1e12},
      {"b", 1.0}};
  absl::string_view number = lower;
  double factor = 1.0;
  for (const auto& unit : kUnits) {
    if (absl::ConsumeSuffix(&number, unit.suffix)) {
      factor = unit.factor;
      break;
    }
  }
  number = absl::StripAsciiWhitespace(number);
  double value = 0;
  if (number.empty() || !absl::SimpleAtod(number, &value) || !std::isfinite(value) || value < 0 ||
      value * factor > static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: '%s' is not a byte size (e.g. 40GiB, 512MiB, 1.5GB)", __FILE__, __LINE__, text));
  }
  return static_cast<int64_t>(std::floor(value * factor));
}

int64_t MemoryBudget::MaxBatch(int64_t seq_len) const {
  const double per_sequence = model_.Predict(1, seq_len) - model_.fixed_bytes();
  const double room = static_cast<double>(budget_bytes_) - model_.fixed_bytes();
  if (seq_len <= 0 || per_sequence <= 0 || room < per_sequence) return 0;
  auto b = static_cast<int64_t>(std::floor(room / per_sequence));
  // Guard the floor against rounding at the boundary.
  while (b > 0 && model_.Predict(b, seq_len) > static_cast<double>(budget_bytes_)) --b;
  return b;
}

std::vector<int64_t> MemoryBudget::MaxBatchPerBucket(
    absl::Span<const int64_t> bucket_lengths) const {
  std::vector<int64_t> out;
  out.reserve(bucket_lengths.size());
  for (int64_t len : bucket_lengths) out.push_back(MaxBatch(len));
  return out;
}

int64_t MemoryBudget::MaxTokens(int64_t row_len) const {
  if (row_len <= 0) return 0;
  const double per_token =
      model_.per_token_bytes() + model_.per_token_seq_bytes() * static_cast<double>(row_len);
  const double room = static_cast<double>(budget_bytes_) - model_.fixed_bytes();
  if (per_token <= 0 || room < per_token) return 0;
  auto t = static_cast<int64_t>(std::floor(room / per_token));
  while (t > 0 && model_.fixed_bytes() + per_token * static_cast<double>(t) >
                      static_cast<double>(budget_bytes_)) {
    --t;
  }
  return t;
}

}  // namespace padless::cuda
