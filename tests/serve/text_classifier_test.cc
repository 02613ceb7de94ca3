// Model directories round-trip (same logits after load), --init-from style loading with another
// label set, and TextClassifier, the engine's synchronous client: thread-safe Predict equal to
// sequential calls, window voting, chunked prediction in order.
#include "padless/serve/text_classifier.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "padless/corpus/label_map.h"
#include "padless/model_files/model_io.h"
#include "padless/tokenize/tokenizer.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

using models::EncoderClassifier;
using model_files::kLegacyWeightsFile;
using model_files::kWeightsFile;
using model_files::LoadedModel;
using model_files::LoadModelDir;
using model_files::LoadWeights;
using model_files::SaveModelDir;
using testing::ScratchDir;
using testing::SmallTokenizer;

models::EncoderConfig Config(int64_t vocab, int64_t labels) {
  return testing::SmallConfig(vocab, labels);
}

class InferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ScratchDir("model");
    tokenize::Tokenizer tokenizer = SmallTokenizer();
    at::manual_seed(3);
    model_ = EncoderClassifier(Config(tokenizer.vocab_size(), 3));
    labels_ = *corpus::LabelMap::FromNames({"neg", "neutral", "pos"});
    ASSERT_TRUE(SaveModelDir(dir_, model_, tokenizer, labels_).ok());
  }
  std::string dir_;
  EncoderClassifier model_{nullptr};
  corpus::LabelMap labels_;
};

TEST_F(InferenceTest, ModelDirectoryRoundTrips) {
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(dir_, at::kCPU);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.ToJson(), model_->config().ToJson());
  EXPECT_EQ(loaded->labels.names(), labels_.names());
  auto a = model_->named_parameters();
  auto b = loaded->model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key(), b[i].key());
    EXPECT_TRUE(at::equal(a[i].value(), b[i].value())) << a[i].key();
  }
  EXPECT_FALSE(loaded->model->is_training());
}

TEST_F(InferenceTest, InitFromAnotherLabelSetKeepsTheEncoder) {
  at::manual_seed(4);
  EncoderClassifier two(Config(model_->config().vocab_size(), 2));
  const absl::Status strict = LoadWeights(*two, dir_ + "/" + kWeightsFile);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(std::string(strict.message()).find("head_weight"), std::string::npos) << strict;
  ASSERT_TRUE(LoadWeights(*two, dir_ + "/" + kWeightsFile, /*skip_mismatched_head=*/true).ok());
  auto a = model_->named_parameters();
  for (const auto& p : two->named_parameters()) {
    if (p.key().rfind("head_", 0) == 0) continue;
    EXPECT_TRUE(at::equal(p.value(), *a.find(p.key()))) << p.key();
  }
}

// Found by tests/fuzz/model_dir_fuzzer on the former TorchScript archive (bytes damaged inside
// its code entry made the importer throw std::runtime_error, which escaped LoadWeights and
// aborted the process). The weights are a safetensors file now; the same damage, over the
// header length and the start of the JSON header, must still be a status naming the file.
TEST_F(InferenceTest, DamagedWeightsArchiveIsAStatusNotACrash) {
  const std::string path = dir_ + "/" + kWeightsFile;
  std::string archive;
  {
    std::ifstream in(path, std::ios::binary);
    archive.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(archive.size(), 64u);
  const std::string patch("\"\xff\xff@\x00l", 6);  // the fuzzer's bytes
  int rejected = 0;
  for (size_t at = 0; at < 56 && at + patch.size() <= archive.size(); ++at) {
    std::string damaged = archive;
    damaged.replace(at, patch.size(), patch);
    const std::string bad = dir_ + "/damaged.safetensors";
    {
      std::ofstream out(bad, std::ios::binary | std::ios::trunc);
      out.write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    }
    EncoderClassifier target(model_->config());
    absl::Status s = absl::OkStatus();
    EXPECT_NO_THROW(s = LoadWeights(*target, bad)) << "patch at " << at;
    if (!s.ok()) {
      ++rejected;
      EXPECT_NE(std::string(s.message()).find(bad), std::string::npos) << s;
    }
  }
  EXPECT_GT(rejected, 0);
}

// A model directory from before the switch to safetensors holds model.pt: a clear error that says
// how to convert it, without running the pickle reader.
TEST_F(InferenceTest, LegacyPickleWeightsGiveAConversionHint) {
  const std::string old_dir = dir_ + "_legacy";
  ASSERT_EQ(
      std::system(("rm -rf '" + old_dir + "' && cp -r '" + dir_ + "' '" + old_dir + "' && mv '" +
                   old_dir + "/" + kWeightsFile + "' '" + old_dir + "/" + kLegacyWeightsFile + "'")
                      .c_str()),
      0);
  absl::StatusOr<LoadedModel> loaded = LoadModelDir(old_dir, c10::Device(c10::kCPU));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(std::string(loaded.status().message()).find("convert_model_pt.py"), std::string::npos)
      << loaded.status();
  EXPECT_NE(std::string(loaded.status().message()).find(kLegacyWeightsFile), std::string::npos);
}

TEST_F(InferenceTest, PredictIsThreadSafeAndDeterministic) {
  absl::StatusOr<std::unique_ptr<TextClassifier>> c = TextClassifier::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) {
    std::string t;
    for (int k = 0; k <= i % 13; ++k) t += (k % 2 ? "good film " : "boring plot ");
    texts.push_back(t);
  }
  texts.push_back("");
  absl::StatusOr<std::vector<Prediction>> reference = (*c)->Predict(texts);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->size(), texts.size());
  // Each prediction equals that of the text alone (batching by length does not leak across texts).
  for (size_t i = 0; i < texts.size(); i += 7) {
    absl::StatusOr<std::vector<Prediction>> one = (*c)->Predict({texts[i]});
    ASSERT_TRUE(one.ok());
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR((*one)[0].probabilities[k], (*reference)[i].probabilities[k], 1e-5) << i;
    }
  }
  std::vector<std::vector<Prediction>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::vector<Prediction>> r = (*c)->Predict(texts);
      if (r.ok()) results[t] = std::move(*r);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_EQ(r.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(r[i].label, (*reference)[i].label);
      EXPECT_NEAR(r[i].probability, (*reference)[i].probability, 1e-5);
    }
  }
  for (const Prediction& p : *reference) {
    float sum = 0;
    for (float q : p.probabilities) sum += q;
    EXPECT_NEAR(sum, 1.0f, 1e-5);
    EXPECT_EQ(p.label, labels_.Name(p.label_id));
  }
}

TEST_F(InferenceTest, WindowVotingAveragesWindows) {
  InferenceOptions options;
  options.long_text = LongText::kWindows;
  options.window_stride = 4;
  absl::StatusOr<std::unique_ptr<TextClassifier>> c = TextClassifier::Load(dir_, options);
  ASSERT_TRUE(c.ok()) << c.status();
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += "the actors were funny and the story was great ";
  absl::StatusOr<std::vector<Prediction>> p = (*c)->Predict({long_text, "good"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  float sum = 0;
  for (float q : (*p)[0].probabilities) sum += q;
  EXPECT_NEAR(sum, 1.0f, 1e-5);
  // Bad options are errors, not crashes.
  options.window_stride = 1000;
  EXPECT_FALSE(TextClassifier::Load(dir_, options).ok());
  EXPECT_FALSE(TextClassifier::Load(dir_ + "/missing").ok());
}

TEST_F(InferenceTest, PredictChunksHandsOutChunksInOrder) {
  absl::StatusOr<std::unique_ptr<TextClassifier>> c = TextClassifier::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> texts;
  for (int i = 0; i < 23; ++i) texts.push_back(testing::Words(1 + i % 9, i));
  absl::StatusOr<std::vector<Prediction>> all = (*c)->Predict(texts);
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<size_t> firsts;
  std::vector<Prediction> joined;
  const absl::Status s =
      (*c)->PredictChunks(texts, 5, [&](size_t first, std::vector<Prediction> chunk) {
        firsts.push_back(first);
        EXPECT_EQ(chunk.size(), std::min<size_t>(5, texts.size() - first));
        for (Prediction& p : chunk) joined.push_back(std::move(p));
        return absl::OkStatus();
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(firsts, (std::vector<size_t>{0, 5, 10, 15, 20}));
  ASSERT_EQ(joined.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(joined[i].label_id, (*all)[i].label_id);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(joined[i].probabilities[k], (*all)[i].probabilities[k], 1e-5) << i;
    }
  }
  // A sink's error stops the call and comes back.
  const absl::Status stopped = (*c)->PredictChunks(
      texts, 5, [](size_t, std::vector<Prediction>) { return absl::AbortedError("stop"); });
  EXPECT_TRUE(absl::IsAborted(stopped)) << stopped;
}

}  // namespace
}  // namespace padless::serve
