#include "padless/serve/http/predict_response.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace padless::serve::http {
namespace {

absl::StatusOr<nlohmann::json> RankedLabels(const std::vector<float>& scores,
                                            const std::vector<std::string>& labels) {
  if (scores.size() != labels.size()) {
    return absl::InternalError(
        absl::StrCat("the model gave ", scores.size(), " scores for ", labels.size(), " labels"));
  }
  for (float s : scores) {
    if (std::isnan(s)) return absl::InternalError("score is NaN");
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep label-id order, so the answer does not depend on the sort.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  nlohmann::json ranked = nlohmann::json::array();
  for (size_t k : order) ranked.push_back({{"score", scores[k]}, {"label", labels[k]}});
  return ranked;
}

// Labels come from the model directory; a label that is not UTF-8 is written with U+FFFD.
std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<std::string> PredictResponseJson(const std::vector<std::vector<float>>& scores,
                                                const std::vector<std::string>& labels,
                                                bool batch) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::vector<float>& s : scores) {
    absl::StatusOr<nlohmann::json> ranked = RankedLabels(s, labels);
    if (!ranked.ok()) return ranked.status();
    if (!batch) return Dump(*ranked);
    out.push_back(std::move(*ranked));
  }
  if (!batch) return absl::InternalError("no result for a single input");
  return Dump(out);
}

}  // namespace padless::serve::http
