#include "padless/model_files/hf_weights.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/model_files/full_width.h"
#include "padless/model_files/safetensors.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/read_file.h"
#include "modernbert_hf.h"

namespace padless::model_files {

namespace {

using base::IsRegularFile;
using base::JoinPath;

// One padless parameter and the Hugging Face tensors it is made of (three: Q, K, V stacked).
struct NameMapping {
  enum Kind { kEncoder, kHeadHidden, kHead };
  std::string padless;
  std::vector<std::string> hf;
  Kind kind = kEncoder;
};

// The weight and bias pair of one module.
void Pair(std::vector<NameMapping>& out, const std::string& padless,
          const std::vector<std::string>& hf_modules,
          NameMapping::Kind kind = NameMapping::kEncoder) {
  for (const char* part : {"weight", "bias"}) {
    NameMapping m{absl::StrCat(padless, "_", part), {}, kind};
    for (const std::string& module : hf_modules) m.hf.push_back(absl::StrCat(module, ".", part));
    out.push_back(std::move(m));
  }
}

std::vector<NameMapping> BertTable(const HfConfig& c, const std::string& p) {
  std::vector<NameMapping> t;
  t.push_back({"word_embeddings", {p + "embeddings.word_embeddings.weight"}});
  t.push_back({"position_embeddings", {p + "embeddings.position_embeddings.weight"}});
  if (c.encoder.type_vocab_size() > 0) {
    t.push_back({"type_embeddings", {p + "embeddings.token_type_embeddings.weight"}});
  }
  Pair(t, "embedding_norm", {p + "embeddings.LayerNorm"});
  for (int64_t i = 0; i < c.encoder.layers(); ++i) {
    const std::string l = absl::StrCat(p, "encoder.layer.", i, ".");
    const std::string me = absl::StrCat("layer", i, ".");
    Pair(t, me + "attention_qkv",
         {l + "attention.self.query", l + "attention.self.key", l + "attention.self.value"});
    Pair(t, me + "attention_out", {l + "attention.output.dense"});
    Pair(t, me + "attention_norm", {l + "attention.output.LayerNorm"});
    Pair(t, me + "ffn_in", {l + "intermediate.dense"});
    Pair(t, me + "ffn_out", {l + "output.dense"});
    Pair(t, me + "ffn_norm", {l + "output.LayerNorm"});
  }
  if (c.family == HfFamily::kBert) {
    Pair(t, "head_dense", {p + "pooler.dense"}, NameMapping::kHeadHidden);
    Pair(t, "head", {"classifier"}, NameMapping::kHead);
  } else {
    Pair(t, "head_dense", {"classifier.dense"}, NameMapping::kHeadHidden);
    Pair(t, "head", {"classifier.out_proj"}, NameMapping::kHead);
  }
  return t;
}

std::vector<NameMapping> DistilBertTable(const HfConfig& c, const std::string& p) {
  std::vector<NameMapping> t;
  t.push_back({"word_embeddings", {p + "embeddings.word_embeddings.weight"}});
  t.push_back({"position_embeddings", {p + "embeddings.position_embeddings.weight"}});
  Pair(t, "embedding_norm", {p + "embeddings.LayerNorm"});
  for (int64_t i = 0; i < c.encoder.layers(); ++i) {
    const std::string l = absl::StrCat(p, "transformer.layer.", i, ".");
    const std::string me = absl::StrCat("layer", i, ".");
    Pair(t, me + "attention_qkv",
         {l + "attention.q_lin", l + "attention.k_lin", l + "attention.v_lin"});
    Pair(t, me + "attention_out", {l + "attention.out_lin"});
    Pair(t, me + "attention_norm", {l + "sa_layer_norm"});
    Pair(t, me + "ffn_in", {l + "ffn.lin1"});
    Pair(t, me + "ffn_out", {l + "ffn.lin2"});
    Pair(t, me + "ffn_norm", {l + "output_layer_norm"});
  }
  Pair(t, "head_dense", {"pre_classifier"}, NameMapping::kHeadHidden);
  Pair(t, "head", {"classifier"}, NameMapping::kHead);
  return t;
}

std::vector<NameMapping> NameTable(const HfConfig& c, const std::string& prefix) {
  if (c.family == HfFamily::kModernBert) {
    std::vector<NameMapping> t;
    for (const internal::ModernBertName& n : internal::ModernBertNames(c.encoder, prefix)) {
      t.push_back({n.padless, {n.hf}, static_cast<NameMapping::Kind>(n.kind)});
    }
    return t;
  }
  return c.family == HfFamily::kDistilBert ? DistilBertTable(c, prefix) : BertTable(c, prefix);
}

// The prefix a *ForSequenceClassification checkpoint puts before the encoder's names.
std::string FamilyPrefix(HfFamily f) {
  if (f == HfFamily::kModernBert) return "model.";
  return f == HfFamily::kDistilBert ? "distilbert." : f == HfFamily::kBert ? "bert." : "roberta.";
}

// The tensors of a checkpoint, from one file or from the shards an index lists.
class TensorSource {
 public:
  absl::Status Open(const std::string& dir) {
    const std::string index = JoinPath(dir, kHfWeightsIndexFile);
    if (IsRegularFile(index)) {
      description_ = absl::StrCat("the shards of ", kHfWeightsIndexFile);
      return OpenShards(dir, index);
    }
    const std::string single = JoinPath(dir, kHfWeightsFile);
    if (IsRegularFile(single)) {
      description_ = kHfWeightsFile;
      return Add(single).status();
    }
    if (IsRegularFile(JoinPath(dir, "pytorch_model.bin"))) {
      return absl::InvalidArgumentError(absl::StrCat(
          JoinPath(dir, "pytorch_model.bin"), ": padless does not read pickle checkpoints (they ",
          "trust lengths from the file and can run code); convert the model once with: python3 -c ",
          "\"from transformers import AutoModel as A; A.from_pretrained('", dir,
          "').save_pretrained('", dir, "', safe_serialization=True)\""));
    }
    return absl::NotFoundError(
        absl::StrCat(dir, ": no ", kHfWeightsFile, " or ", kHfWeightsIndexFile));
  }

  bool Contains(const std::string& name) const { return where_.count(name) > 0; }
  // The checkpoint's files, for messages: "model.safetensors" or "the shards of ...".
  const std::string& description() const { return description_; }

  absl::StatusOr<at::Tensor> Get(const std::string& name) const {
    auto it = where_.find(name);
    if (it == where_.end()) {
      return absl::NotFoundError(absl::StrCat(origin_, ": tensor '", name, "' is missing"));
    }
    return files_[it->second]->Tensor(name);
  }

 private:
  absl::StatusOr<size_t> Add(const std::string& path) {
    origin_ = origin_.empty() ? path : origin_;
    absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
    if (!f.ok()) return f.status();
    files_.push_back(std::make_unique<SafetensorsFile>(std::move(*f)));
    for (const auto& entry : files_.back()->entries()) where_[entry.first] = files_.size() - 1;
    return files_.size() - 1;
  }

  absl::Status OpenShards(const std::string& dir, const std::string& index) {
    origin_ = index;
    absl::StatusOr<std::string> text = base::ReadFile(index);
    if (!text.ok()) return text.status();
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(index, ": no 'weight_map' object"));
    }
    std::map<std::string, size_t> opened;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos ||
          file.get<std::string>().rfind("..", 0) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(index, ": tensor '", name, "': shard must be a file name in ", dir));
      }
      const std::string shard = file.get<std::string>();
      if (!opened.count(shard)) {
        absl::StatusOr<size_t> i = Add(JoinPath(dir, shard));
        if (!i.ok()) return i.status();
        opened[shard] = *i;
      }
      if (!files_[opened[shard]]->Contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat(JoinPath(dir, shard), ": tensor '", name,
                                                       "' listed by ", index, " is missing"));
      }
    }
    return absl::OkStatus();
  }

  std::string origin_;
  std::string description_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;
};

// The parameter `m` from the checkpoint (Q, K, V concatenated), shape-checked against `param`.
absl::StatusOr<at::Tensor> Gather(const TensorSource& src, const NameMapping& m,
                                  const at::Tensor& param, const std::string& dir) {
  std::vector<at::Tensor> parts;
  for (const std::string& name : m.hf) {
    absl::StatusOr<at::Tensor> t = src.Get(name);
    if (!t.ok()) return t.status();
    if (t->size(0) * static_cast<int64_t>(m.hf.size()) != param.size(0) ||
        t->sizes().slice(1) != param.sizes().slice(1)) {
      std::vector<int64_t> want = param.sizes().vec();
      want[0] /= static_cast<int64_t>(m.hf.size());
      return absl::InvalidArgumentError(absl::StrCat(dir, ": tensor '", name, "' has shape ",
                                                     c10::str(t->sizes()), ", config.json implies ",
                                                     "[", absl::StrJoin(want, ", "), "]"));
    }
    parts.push_back(*t);
  }
  return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
}

// What ImportedModel::new_head_reason says: the head tensors that `weights` (the checkpoint's
// files) lack, and the classification layer's shape errors.
std::string NewHeadReason(const std::vector<std::string>& missing,
                          const std::vector<std::string>& mismatched, const std::string& weights) {
  std::vector<std::string> parts;
  if (!missing.empty()) {
    parts.push_back(absl::StrCat("no ", absl::StrJoin(missing, ", "), " in ", weights));
  }
  parts.insert(parts.end(), mismatched.begin(), mismatched.end());
  return absl::StrJoin(parts, "; ");
}

// Copies the checkpoint's tensors into `out.model` as the table says. A head tensor that is
// missing, or a classification layer of another shape, keeps padless's initialisation: a new
// head, which out.head_loaded and out.new_head_reason report.
absl::Status LoadTable(const TensorSource& src, const std::vector<NameMapping>& table,
                       const std::string& dir, ImportedModel& out) {
  auto params = out.model->named_parameters();
  at::NoGradGuard no_grad;
  std::vector<std::string> missing_head;  // by the checkpoint's names
  std::vector<std::string> mismatched_head;
  for (const NameMapping& m : table) {
    at::Tensor* param = params.find(m.padless);
    if (param == nullptr) continue;  // a head layer this config does not have
    std::vector<std::string> absent;
    for (const std::string& name : m.hf) {
      if (!src.Contains(name)) absent.push_back(name);
    }
    if (!absent.empty() && m.kind != NameMapping::kEncoder) {
      missing_head.insert(missing_head.end(), absent.begin(), absent.end());
      continue;  // keeps padless's initialisation: a new head
    }
    absl::StatusOr<at::Tensor> value = Gather(src, m, *param, dir);
    if (!value.ok() && m.kind == NameMapping::kHead) {
      // Another label count: a new head. The message without Gather's "dir: " prefix.
      mismatched_head.emplace_back(absl::StripPrefix(value.status().message(), dir + ": "));
      continue;
    }
    if (!value.ok()) return value.status();
    param->copy_(*value);
  }
  out.new_head_reason = NewHeadReason(missing_head, mismatched_head, src.description());
  out.head_loaded = out.new_head_reason.empty();
  return absl::OkStatus();
}

}  // namespace

bool IsHuggingFaceModelDir(const std::string& dir) {
  const std::string path = JoinPath(dir, "config.json");
  if (!IsRegularFile(path)) return false;
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return false;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  return j.is_object() && (j.contains("model_type") || j.contains("architectures"));
}

absl::StatusOr<ImportedModel> ImportHuggingFace(const std::string& dir, int64_t num_labels) {
  const std::string config_path = JoinPath(dir, "config.json");
  absl::StatusOr<std::string> text = base::ReadFile(config_path);
  if (!text.ok()) return text.status();
  ImportedModel out;
  absl::StatusOr<HfConfig> hf = ParseHfConfig(*text, config_path);
  if (!hf.ok()) return hf.status();
  out.hf = std::move(*hf);
  if (num_labels > 0 && num_labels != out.hf.encoder.num_labels()) {
    out.hf.encoder.num_labels(num_labels);
    out.hf.labels.clear();
  }
  TensorSource src;
  absl::Status s = src.Open(dir);
  if (!s.ok()) return s;
  std::string prefix = FamilyPrefix(out.hf.family);
  const bool modernbert = out.hf.family == HfFamily::kModernBert;
  if (!src.Contains(prefix + (modernbert ? "embeddings.tok_embeddings.weight"
                                         : "embeddings.word_embeddings.weight"))) {
    prefix.clear();
  }
  try {
    out.model = models::EncoderClassifier(out.hf.encoder);
    s = LoadTable(src, NameTable(out.hf, prefix), dir, out);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": cannot build the model: ", e.what_without_backtrace()));
  }
  if (!s.ok()) return s;
  out.model->eval();
  // A pruned model's export (full_width.h) holds its removed units as zeros: run it pruned again.
  absl::StatusOr<models::EncoderClassifier> narrow = DropZeroUnits(out.model);
  if (!narrow.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": ", narrow.status().message()));
  }
  out.model = *narrow;
  out.hf.encoder = out.model->config();
  return out;
}

absl::Status ExportHuggingFace(models::EncoderClassifier& model, const std::vector<std::string>& labels,
                               const std::string& dir) {
  // The config.json of a pruned model is its full-width form's, and the weights go out at full
  // width, removed units zero: what transformers 5 loads.
  absl::StatusOr<std::string> json = HfConfigJson(model->config(), labels);
  if (!json.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": cannot export as a Hugging Face model: ", json.status().message()));
  }
  absl::StatusOr<models::EncoderClassifier> full = FullWidthModel(model);
  if (!full.ok()) return full.status();
  HfConfig hf;
  hf.encoder = (*full)->config();
  hf.family = ExportFamily(hf.encoder);
  auto params = (*full)->named_parameters();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const NameMapping& m : NameTable(hf, FamilyPrefix(hf.family))) {
    const at::Tensor* p = params.find(m.padless);
    if (p == nullptr) continue;
    // Thirds of the fused QKV rows: Q, K, V.
    const std::vector<at::Tensor> parts = p->detach().chunk(static_cast<int64_t>(m.hf.size()), 0);
    for (size_t i = 0; i < m.hf.size(); ++i) tensors.emplace_back(m.hf[i], parts[i].to(at::kFloat));
  }
  absl::Status s = base::MakeDirectories(dir);
  if (s.ok()) s = base::WriteFileAtomically(JoinPath(dir, "config.json"), *json);
  if (s.ok()) s = WriteSafetensors(JoinPath(dir, kHfWeightsFile), tensors, {{"format", "pt"}});
  return s;
}

}  // namespace padless::model_files
