#include "padless/serve/text_classifier.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/eval/corpus_scores.h"
#include "padless/model_files/model_io.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::models {

absl::StatusOr<LongText> ParseLongText(const std::string& name) {
  if (name == "head_tail") return LongText::kHeadTail;
  if (name == "windows" || name == "window") return LongText::kWindows;
  return absl::InvalidArgumentError(
      absl::StrCat("long text mode: unknown '", name, "' (expected head_tail or windows)"));
}

struct TextClassifier::Impl {
  LoadedModel loaded;
  InferenceOptions options;
};

TextClassifier::TextClassifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextClassifier::~TextClassifier() = default;

absl::StatusOr<std::unique_ptr<TextClassifier>> TextClassifier::Load(const std::string& model_dir,
                                                                     InferenceOptions options) {
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(model_dir, options.device);
  if (!loaded.ok()) return loaded.status();
  options.max_len = std::min(options.max_len, loaded->config.max_sequence_length());
  if (options.max_len < 3) {
    return absl::InvalidArgumentError(absl::StrCat("max_len: must be >= 3, got ", options.max_len));
  }
  if (options.long_text == LongText::kWindows &&
      (options.window_stride < 0 || options.window_stride >= options.max_len - 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("window_stride: must be in [0, max_len - 2), got ", options.window_stride));
  }
  options.max_tokens = std::max(options.max_tokens, options.max_len);
  auto impl = std::make_unique<Impl>(Impl{std::move(*loaded), options});
  return std::unique_ptr<TextClassifier>(new TextClassifier(std::move(impl)));
}

const tokenize::LabelMap& TextClassifier::labels() const { return impl_->loaded.labels; }
const EncoderConfig& TextClassifier::config() const { return impl_->loaded.config; }

absl::StatusOr<std::vector<Prediction>> TextClassifier::Predict(
    absl::Span<const std::string> texts) const {
  const InferenceOptions& o = impl_->options;
  const tokenize::Tokenizer& tokenizer = impl_->loaded.tokenizer;
  // Every text (or window of a text) becomes one example; `owner` maps it back.
  tokenize::TokenizedCorpus corpus;
  std::vector<size_t> owner;
  tokenize::EncodeOptions encode;
  encode.max_length = o.max_len;
  encode.truncation = tokenize::Truncation::kHeadTail;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (o.long_text == LongText::kWindows) {
      absl::StatusOr<std::vector<tokenize::Encoding>> windows =
          tokenizer.EncodeWindows(texts[i], o.max_len, o.window_stride);
      if (!windows.ok()) {
        return absl::Status(windows.status().code(),
                            absl::StrCat("text ", i, ": ", windows.status().message()));
      }
      for (const tokenize::Encoding& w : *windows) {
        corpus.Add(w.ids, {}, 0);
        owner.push_back(i);
      }
    } else {
      absl::StatusOr<tokenize::Encoding> e = tokenizer.Encode(texts[i], encode);
      if (!e.ok()) {
        return absl::Status(e.status().code(),
                            absl::StrCat("text ", i, ": ", e.status().message()));
      }
      corpus.Add(e->ids, {}, 0);
      owner.push_back(i);
    }
  }
  std::vector<Prediction> out(texts.size());
  if (corpus.empty()) return out;
  // Sorted token-budget batches: similar lengths together, little padding, on any device.
  const batching::PlannerOptions plan = batching::PlannerOptions()
                                            .sampler(batching::Sampler::kTokenBudget)
                                            .max_len(o.max_len)
                                            .max_tokens(o.max_tokens)
                                            .seed(0);
  absl::StatusOr<CorpusScores> scores =
      ScoreCorpus(impl_->loaded.model, corpus, plan, o.device, o.amp,
                  impl_->loaded.tokenizer.special_ids().pad, /*workers=*/0);
  if (!scores.ok()) return scores.status();
  const int64_t classes = impl_->loaded.config.num_labels();
  std::vector<std::vector<double>> sums(texts.size(), std::vector<double>(classes, 0.0));
  std::vector<int64_t> counts(texts.size(), 0);
  for (size_t k = 0; k < owner.size(); ++k) {
    ++counts[owner[k]];
    for (int64_t c = 0; c < classes; ++c) sums[owner[k]][c] += scores->probabilities[k][c];
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    Prediction& p = out[i];
    p.probabilities.resize(classes);
    for (int64_t c = 0; c < classes; ++c) {
      p.probabilities[c] = static_cast<float>(sums[i][c] / std::max<int64_t>(counts[i], 1));
    }
    p.label_id =
        std::max_element(p.probabilities.begin(), p.probabilities.end()) - p.probabilities.begin();
    p.label = impl_->loaded.labels.Name(p.label_id);
    p.probability = p.probabilities[p.label_id];
  }
  return out;
}

}  // namespace padless::models
