#include "padless/corpus/label_map.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/file_kind.h"

namespace padless::corpus {

LabelMap LabelMap::FromLabels(absl::Span<const std::string> labels) {
  std::set<std::string> distinct(labels.begin(), labels.end());
  std::vector<std::string> names(distinct.begin(), distinct.end());
  const bool numeric = std::all_of(names.begin(), names.end(), [](const std::string& s) {
    int64_t v;
    return absl::SimpleAtoi(s, &v);
  });
  if (numeric) {
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      int64_t x = 0, y = 0;
      (void)absl::SimpleAtoi(a, &x);
      (void)absl::SimpleAtoi(b, &y);
      return x < y;
    });
  }
  LabelMap map;
  for (std::string& name : names) {
    map.ids_.emplace(name, map.size());
    map.names_.push_back(std::move(name));
  }
  return map;
}

LabelMap LabelMap::FromCorpus(const RawCorpus& corpus) {
  std::vector<std::string> labels;
  labels.reserve(corpus.examples.size());
  for (const Example& e : corpus.examples) labels.push_back(e.label);
  return FromLabels(labels);
}

absl::StatusOr<LabelMap> LabelMap::FromNames(std::vector<std::string> names) {
  LabelMap map;
  for (std::string& name : names) {
    if (name.empty()) return absl::InvalidArgumentError("empty label name");
    if (!map.ids_.emplace(name, map.size()).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate label '", name, "'"));
    }
    map.names_.push_back(std::move(name));
  }
  return map;
}

absl::StatusOr<int64_t> LabelMap::Id(absl::string_view label) const {
  auto it = ids_.find(label);
  if (it == ids_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown label '", label, "' (known: ", size(), " labels)"));
  }
  return it->second;
}

absl::Status LabelMap::Save(const std::string& path) const {
  const nlohmann::json j = {{"format", "padless-labels"}, {"version", 1}, {"labels", names_}};
  return base::WriteFileAtomically(path, j.dump(2) + "\n");
}

absl::StatusOr<LabelMap> LabelMap::Load(const std::string& path) {
  if (absl::Status s = base::CheckRegularFile(path, "label map"); !s.ok()) return s;
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open label map ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": label map is not valid JSON"));
  }
  // Not j.value("format", ""): it throws on a non-string "format" instead of returning the default.
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != "padless-labels" ||
      !j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a padless label map of version 1"));
  }
  const auto labels = j.find("labels");
  if (labels == j.end() || !labels->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": field 'labels' is not an array"));
  }
  std::vector<std::string> names;
  for (const nlohmann::json& label : *labels) {
    if (!label.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": field 'labels' has a non-string"));
    }
    names.push_back(label.get<std::string>());
  }
  absl::StatusOr<LabelMap> map = FromNames(std::move(names));
  if (!map.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", map.status().message()));
  return map;
}

std::string LabelMap::PathForModel(const std::string& model_path) {
  absl::string_view stem = model_path;
  if (absl::EndsWith(stem, ".model")) stem.remove_suffix(6);
  return absl::StrCat(stem, ".labels.json");
}

}  // namespace padless::corpus
