// LabelMap: the mapping between label strings in the data ("pos", "0", ...) and the dense class
// ids a classifier predicts. It is built once from the training data, saved next to the model as
// a small JSON file, and reloaded for evaluation and prediction so that ids never drift.
#ifndef PADLESS_CORPUS_LABEL_MAP_H_
#define PADLESS_CORPUS_LABEL_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "padless/corpus/corpus_reader.h"

namespace padless::corpus {

class LabelMap {
 public:
  LabelMap() = default;

  // The distinct labels, sorted numerically when all are integers ("2" < "10") and
  // lexicographically otherwise, so ids do not depend on row order.
  static LabelMap FromLabels(absl::Span<const std::string> labels);
  // FromLabels over the labels of every example: the label map of a model trained on `corpus`.
  static LabelMap FromCorpus(const RawCorpus& corpus);
  // Keeps the given order; fails on duplicates or empty names.
  static absl::StatusOr<LabelMap> FromNames(std::vector<std::string> names);

  int64_t size() const { return static_cast<int64_t>(names_.size()); }
  // NotFound naming the label when it is not in the map.
  absl::StatusOr<int64_t> Id(absl::string_view label) const;
  const std::string& Name(int64_t id) const { return names_[id]; }
  const std::vector<std::string>& names() const { return names_; }

  // JSON: {"format": "padless-labels", "version": 1, "labels": ["neg", "pos"]}.
  absl::Status Save(const std::string& path) const;
  static absl::StatusOr<LabelMap> Load(const std::string& path);
  // The label file that belongs to a model: "m.model" -> "m.labels.json".
  static std::string PathForModel(const std::string& model_path);

 private:
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, int64_t> ids_;
};

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_LABEL_MAP_H_
