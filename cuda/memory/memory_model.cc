#include "padless/cuda/memory/memory_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace padless::cuda {
namespace {

// Columns of the design matrix for one sample: 1, b*s, b*s^2.
std::array<double, 3> Features(const MemorySample& s) {
  const double b = static_cast<double>(s.batch), len = static_cast<double>(s.seq_len);
  return {1.0, b * len, b * len * len};
}

// Solves the k x k system a x = y (row-major, k <= 3) by Gaussian elimination with partial
// pivoting; false when it is singular.
bool Solve(std::array<std::array<double, 3>, 3> a, std::array<double, 3> y, int k,
           std::array<double, 3>& x) {
  for (int c = 0; c < k; ++c) {
    int pivot = c;
    for (int r = c + 1; r < k; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (std::abs(a[pivot][c]) < 1e-12) return false;
    std::swap(a[c], a[pivot]);
    std::swap(y[c], y[pivot]);
    for (int r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      y[r] -= f * y[c];
    }
  }
  for (int c = k - 1; c >= 0; --c) {
    double v = y[c];
    for (int j = c + 1; j < k; ++j) v -= a[c][j] * x[j];
    x[c] = v / a[c][c];
  }
  return true;
}

absl::StatusOr<std::array<double, 3>> WeightedLeastSquares(absl::Span<const MemorySample> samples,
                                                           int k) {
  // Rows are divided by the measured peak (relative error), and columns by their largest
  // magnitude so that the normal equations stay well conditioned (b*s^2 reaches ~1e9).
  std::array<double, 3> scale = {0, 0, 0};
  for (const MemorySample& s : samples) {
    const auto f = Features(s);
    for (int j = 0; j < k; ++j) scale[j] = std::max(scale[j], f[j] / s.peak_bytes);
  }
  std::array<std::array<double, 3>, 3> ata{};
  std::array<double, 3> aty{};
  for (const MemorySample& s : samples) {
    const auto f = Features(s);
    std::array<double, 3> row{};
    for (int j = 0; j < k; ++j) row[j] = f[j] / s.peak_bytes / scale[j];
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) ata[i][j] += row[i] * row[j];
      aty[i] += row[i];  // the target y / peak is 1
    }
  }
  std::array<double, 3> x = {0, 0, 0};
  if (!Solve(ata, aty, k, x)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: MemoryModel::Fit: the samples do not determine %d terms (need distinct batch * "
        "seq_len and batch * seq_len^2 values)",
        __FILE__, __LINE__, k));
  }
  for (int j = 0; j < k; ++j) x[j] /= scale[j];
  return x;
}

}  // namespace

absl::StatusOr<MemoryModel> MemoryModel::Fit(absl::Span<const MemorySample> samples,
                                             bool quadratic) {
  for (size_t i = 0; i < samples.size(); ++i) {
    const MemorySample& s = samples[i];
    if (s.batch <= 0 || s.seq_len <= 0 || s.peak_bytes <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: MemoryModel::Fit: sample %d has batch %d, seq_len %d, peak_bytes %d (all must "
          "be > 0)",
          __FILE__, __LINE__, i, s.batch, s.seq_len, s.peak_bytes));
    }
  }
  const int k = quadratic ? 3 : 2;
  if (static_cast<int>(samples.size()) < k) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: MemoryModel::Fit: %d samples for %d terms", __FILE__, __LINE__, samples.size(), k));
  }
  absl::StatusOr<std::array<double, 3>> x = WeightedLeastSquares(samples, k);
  if (!x.ok()) return x.status();
  if (quadratic && (*x)[2] < 0) return Fit(samples, /*quadratic=*/false);
  return MemoryModel((*x)[0], (*x)[1], quadratic ? (*x)[2] : 0.0);
}

double MemoryModel::Predict(int64_t batch, int64_t seq_len) const {
  const auto f = Features({batch, seq_len, 0});
  return fixed_ + per_token_ * f[1] + per_token_seq_ * f[2];
}

double MemoryModel::RelativeError(const MemorySample& s) const {
  return std::abs(Predict(s.batch, s.seq_len) - static_cast<double>(s.peak_bytes)) /
         static_cast<double>(s.peak_bytes);
}

std::string MemoryModel::ToJson() const {
  return nlohmann::json{{"fixed_bytes", fixed_},
                        {"per_token_bytes", per_token_},
                        {"per_token_seq_bytes", per_token_seq_}}
      .dump();
}

absl::StatusOr<MemoryModel> MemoryModel::FromJson(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d: MemoryModel::FromJson: not a JSON object", __FILE__, __LINE__));
  }
  double v[3];
  const char* keys[3] = {"fixed_bytes", "per_token_bytes", "per_token_seq_bytes"};
  for (int i = 0; i < 3; ++i) {
    auto it = j.find(keys[i]);
    if (it == j.end() || !it->is_number()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: MemoryModel::FromJson: field '%s' missing or not a number",
                          __FILE__, __LINE__, keys[i]));
    }
    v[i] = it->get<double>();
  }
  return MemoryModel(v[0], v[1], v[2]);
}

absl::StatusOr<HeldOutReport> FitWithHeldOutLengths(absl::Span<const MemorySample> samples,
                                                    absl::Span<const int64_t> held_out_lengths,
                                                    bool quadratic) {
  const absl::flat_hash_set<int64_t> held(held_out_lengths.begin(), held_out_lengths.end());
  HeldOutReport report;
  std::vector<MemorySample> fit;
  for (const MemorySample& s : samples) {
    (held.contains(s.seq_len) ? report.held_out : fit).push_back(s);
  }
  if (report.held_out.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: FitWithHeldOutLengths: no sample has a held-out length", __FILE__, __LINE__));
  }
  absl::StatusOr<MemoryModel> model = MemoryModel::Fit(fit, quadratic);
  if (!model.ok()) return model.status();
  report.model = *model;
  report.fitted_samples = static_cast<int64_t>(fit.size());
  double sum = 0;
  for (const MemorySample& s : report.held_out) {
    const double e = model->RelativeError(s);
    report.relative_errors.push_back(e);
    report.max_relative_error = std::max(report.max_relative_error, e);
    sum += e;
  }
  report.mean_relative_error = sum / static_cast<double>(report.held_out.size());
  return report;
}

}  // namespace padless::cuda
