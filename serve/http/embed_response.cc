#include "padless/serve/http/embed_response.h"

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/serve/http/float_json.h"

namespace padless::serve::http {
namespace {

// A sign, 9 digits, a point, an exponent or a comma: most values take less, so that most bodies
// take one allocation (AppendJsonFloatArray's transient room included).
constexpr size_t kTypicalCharsPerValue = 16;

absl::Status NotFinite(size_t input) {
  return absl::InternalError(
      absl::StrCat("the embedding of input ", input, " has a NaN or infinite value"));
}

}  // namespace

absl::StatusOr<std::string> EmbedResponseJson(const std::vector<std::vector<float>>& embeddings) {
  size_t values = 0;
  for (const std::vector<float>& e : embeddings) values += e.size();
  std::string body;
  body.reserve(2 + embeddings.size() + values * kTypicalCharsPerValue);
  body.push_back('[');
  for (size_t i = 0; i < embeddings.size(); ++i) {
    if (i > 0) body.push_back(',');
    if (!AppendJsonFloatArray(embeddings[i].data(), embeddings[i].size(), &body)) {
      return NotFinite(i);
    }
  }
  body.push_back(']');
  return body;
}

absl::StatusOr<std::string> EmbedAllResponseJson(
    const std::vector<std::vector<float>>& token_embeddings, int64_t width) {
  if (width < 1) return absl::InternalError(absl::StrCat("token vectors of width ", width));
  const size_t row = static_cast<size_t>(width);
  size_t values = 0;
  for (const std::vector<float>& m : token_embeddings) values += m.size();
  std::string body;
  body.reserve(2 + token_embeddings.size() * 3 + values * kTypicalCharsPerValue + values / row);
  body.push_back('[');
  for (size_t i = 0; i < token_embeddings.size(); ++i) {
    const std::vector<float>& matrix = token_embeddings[i];
    if (matrix.size() % row != 0) {
      return absl::InternalError(absl::StrCat("the token vectors of input ", i, " hold ",
                                              matrix.size(), " values, not rows of ", width));
    }
    body.append(i > 0 ? ",[" : "[");
    for (size_t at = 0; at < matrix.size(); at += row) {
      if (at > 0) body.push_back(',');
      if (!AppendJsonFloatArray(matrix.data() + at, row, &body)) return NotFinite(i);
    }
    body.push_back(']');
  }
  body.push_back(']');
  return body;
}

}  // namespace padless::serve::http
