// FinishEmbedding (inference_engine.h): a request's view of an engine's embedding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/serve/inference_engine.h"

namespace padless::serve {

absl::Status FinishEmbedding(std::vector<float>& embedding, bool normalize, int64_t dimensions) {
  const int64_t width = static_cast<int64_t>(embedding.size());
  if (dimensions < 0 || dimensions > width) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dimensions: ", dimensions, " is not between 1 and the model's width ", width));
  }
  if (dimensions > 0) embedding.resize(static_cast<size_t>(dimensions));
  if (!normalize) return absl::OkStatus();
  // Accumulated in double: a 4096-wide sum of squares in fp32 loses digits the parity with
  // sentence-transformers (torch's fp32 norm, pairwise) would notice.
  double squares = 0;
  for (float v : embedding) squares += static_cast<double>(v) * v;
  // torch.nn.functional.normalize divides by max(norm, 1e-12): a zero vector stays zero.
  const double norm = std::max(std::sqrt(squares), 1e-12);
  for (float& v : embedding) v = static_cast<float>(v / norm);
  return absl::OkStatus();
}

}  // namespace padless::serve
