// The body of a successful POST /predict, as Hugging Face text-embeddings-inference writes it
// (PredictResponse): per input a list of {"score": s, "label": name} over every label, sorted by
// score, highest first; a list of such lists for a batch request.
#ifndef PADLESS_SERVE_HTTP_PREDICT_RESPONSE_H_
#define PADLESS_SERVE_HTTP_PREDICT_RESPONSE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace padless::serve::http {

// `scores[i][k]` is input i's score for label id k (probabilities, or logits for raw_scores);
// `labels[k]` names label id k. Internal (TEI: a Backend error) when a score is NaN, or when an
// input has another number of scores than there are labels.
absl::StatusOr<std::string> PredictResponseJson(const std::vector<std::vector<float>>& scores,
                                                const std::vector<std::string>& labels, bool batch);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_PREDICT_RESPONSE_H_
