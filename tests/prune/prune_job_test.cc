// The prune-and-fine-tune job (prune_job.h) end to end on the CPU with a tiny model: two rounds
// reach the asked shares, every round's model directory loads, the report has a row per round,
// the final model serves through TextClassifier with the probabilities that evaluation gives, and
// bad options or data are errors that leave no output; a ModernBERT model prunes as well.
#include "padless/prune/prune_job.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "padless/corpus/label_map.h"
#include "padless/model_files/model_io.h"
#include "padless/prune/structured_prune.h"
#include "padless/serve/text_classifier.h"
#include "padless/train/train_job.h"
#include "prune_test_util.h"
#include "serve_fixtures.h"

namespace padless::prune {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Labelled TSV rows: the label follows a few of the words, so that there is something to learn.
std::string WriteData(const std::string& dir, const std::string& name, int rows, int seed) {
  const std::string path = dir + "/" + name;
  std::ofstream out(path);
  out << "label\ttext\n";
  const char* labels[] = {"neg", "neutral", "pos"};
  for (int i = 0; i < rows; ++i) {
    out << labels[(i + seed) % 3] << "\t" << serve::testing::Words(3 + i % 7, i + seed) << "\n";
  }
  return path;
}

class PruneJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = serve::testing::WriteSmallModelDir("prune_job_model");
    dir_ = serve::testing::ScratchDir("prune_job");
    options_.model = model_;
    options_.data = WriteData(dir_, "train.tsv", 60, 0);
    options_.dev = WriteData(dir_, "dev.tsv", 21, 1);
    options_.out = dir_ + "/pruned";
    options_.device = c10::Device(c10::kCPU);
    options_.max_len = 32;
    options_.max_tokens = 128;
    options_.steps = 3;
    options_.threads = 1;
    options_.quiet = true;
  }

  std::string model_, dir_;
  PruneJobOptions options_;
};

TEST_F(PruneJobTest, TwoRoundsReachTheSharesAndTheModelServes) {
  options_.heads = 0.5;
  options_.ffn = 0.5;
  options_.rounds = 2;
  absl::StatusOr<PruneJobResult> result = RunPruneJob(options_);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rounds.size(), 3u);
  // SmallConfig: 2 layers of 4 heads, FFN 64 (multiples of 16).
  EXPECT_EQ(result->rounds[0].heads_left, 8);
  EXPECT_EQ(result->rounds[1].heads_left, 6);
  EXPECT_EQ(result->rounds[2].heads_left, 4);
  EXPECT_EQ(result->rounds[0].ffn_left, 128);
  EXPECT_EQ(result->rounds[2].ffn_left, 64);
  EXPECT_LT(result->rounds[2].parameters, result->rounds[1].parameters);
  EXPECT_LT(result->rounds[1].parameters, result->rounds[0].parameters);
  for (size_t k = 1; k < 3; ++k) {
    ASSERT_TRUE(result->rounds[k].dev_accuracy_tuned.has_value()) << k;
    EXPECT_GE(*result->rounds[k].dev_accuracy_tuned, 0.0);
  }
  EXPECT_EQ(result->rounds[2].dir, options_.out);
  const std::string report = Slurp(options_.out + "/prune_report.csv");
  EXPECT_EQ(report, PruneReportCsv(*result));
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 4);
  EXPECT_NE(Slurp(options_.out + "/rounds/round-1-importance.csv").find("head,0,0,0,"),
            std::string::npos);
  EXPECT_NE(Slurp(options_.out + "/rounds/round-2-importance.svg").find("</svg>"),
            std::string::npos);

  absl::StatusOr<model_files::LoadedModel> round1 =
      model_files::LoadModelDir(options_.out + "/rounds/round-1", c10::Device(c10::kCPU));
  ASSERT_TRUE(round1.ok()) << round1.status();
  absl::StatusOr<model_files::LoadedModel> last =
      model_files::LoadModelDir(options_.out, c10::Device(c10::kCPU));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->config.pruned());
  int64_t heads = 0;
  for (int64_t l = 0; l < last->config.layers(); ++l) heads += last->config.heads_in_layer(l);
  EXPECT_EQ(heads, 4);

  serve::InferenceOptions serving;
  serving.device = c10::Device(c10::kCPU);
  absl::StatusOr<std::unique_ptr<serve::TextClassifier>> classifier =
      serve::TextClassifier::Load(options_.out, serving);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  const std::vector<std::string> texts = {serve::testing::Words(5, 3), ""};
  absl::StatusOr<std::vector<serve::Prediction>> predictions = (*classifier)->Predict(texts);
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  ASSERT_EQ(predictions->size(), 2u);
  EXPECT_EQ((*predictions)[0].probabilities.size(), 3u);
}

TEST_F(PruneJobTest, PruneOnlyWritesTheFinalModelWithoutFineTuning) {
  options_.heads = 0.25;
  options_.fine_tune = false;
  absl::StatusOr<PruneJobResult> result = RunPruneJob(options_);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rounds.size(), 2u);
  EXPECT_FALSE(result->rounds[1].dev_accuracy_tuned.has_value());
  EXPECT_EQ(result->rounds[1].heads_left, 6);
  EXPECT_EQ(result->rounds[1].ffn_left, 128);
  EXPECT_TRUE(model_files::LoadModelDir(options_.out, c10::Device(c10::kCPU)).ok());
}

TEST_F(PruneJobTest, PrunedModelTrainsStopsAndResumes) {
  options_.heads = 0.5;
  options_.ffn = 0.5;
  options_.fine_tune = false;
  ASSERT_TRUE(RunPruneJob(options_).ok());
  train::TrainJobOptions t;
  t.data = options_.data;
  t.dev = options_.dev;
  t.init_from = options_.out;
  t.out = dir_ + "/resumed";
  t.max_len = 32;
  t.threads = 1;
  t.quiet = true;
  t.device = c10::Device(c10::kCPU);
  t.epochs = 2;
  t.train.checkpoint_every(2).stop_after(3);
  absl::StatusOr<train::TrainJobResult> first = train::RunTrainJob(t);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->train.steps, 3);
  t.train.stop_after(0).resume(true);
  absl::StatusOr<train::TrainJobResult> resumed = train::RunTrainJob(t);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_GT(resumed->train.steps, 3);
  absl::StatusOr<model_files::LoadedModel> back = model_files::LoadModelDir(t.out, c10::Device(c10::kCPU));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->config.pruned_heads(),
            model_files::LoadModelDir(options_.out, c10::Device(c10::kCPU))->config.pruned_heads());
}

// A ModernBERT model directory (issue 45; no biases, ModernBERT-base's default, and a vocabulary
// rounded up past its tokenizer's, as ModernBERT's is) prunes, fine-tunes from its own directory
// and loads as the pruned ModernBERT it is.
TEST_F(PruneJobTest, ModernBertPrunesAndFineTunes) {
  const std::string dir = serve::testing::ScratchDir("prune_job_modernbert");
  const tokenize::Tokenizer tokenizer = serve::testing::SmallTokenizer();
  at::manual_seed(45);
  models::EncoderClassifier model(
      testing::SmallModernBert(/*biases=*/false).vocab_size(tokenizer.vocab_size() + 8));
  const corpus::LabelMap labels = *corpus::LabelMap::FromNames({"neg", "neutral", "pos"});
  ASSERT_TRUE(model_files::SaveModelDir(dir, model, tokenizer, labels).ok());
  options_.model = dir;
  options_.heads = 0.5;
  options_.ffn = 0.5;
  options_.steps = 2;
  absl::StatusOr<PruneJobResult> result = RunPruneJob(options_);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rounds.size(), 2u);
  EXPECT_EQ(result->rounds[1].heads_left, 4);
  EXPECT_EQ(result->rounds[1].ffn_left, 64);
  EXPECT_TRUE(result->rounds[1].dev_accuracy_tuned.has_value());
  absl::StatusOr<model_files::LoadedModel> last =
      model_files::LoadModelDir(options_.out, c10::Device(c10::kCPU));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->config.modernbert());
  EXPECT_TRUE(last->config.pruned());
  EXPECT_EQ(last->config.total_heads(), 4);
  EXPECT_LT(ParameterCount(last->model), ParameterCount(model));
}

TEST_F(PruneJobTest, BadOptionsAreErrorsBeforeAnyFile) {
  auto expect_error = [&](PruneJobOptions o, const std::string& needle) {
    absl::StatusOr<PruneJobResult> r = RunPruneJob(o);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(std::string(r.status().message()).find(needle), std::string::npos) << r.status();
  };
  PruneJobOptions o = options_;
  o.heads = 1.0;
  expect_error(o, "--heads must be in [0, 1)");
  o = options_;
  o.ffn = -0.5;
  expect_error(o, "--ffn must be in [0, 1)");
  o = options_;
  o.rounds = 0;
  expect_error(o, "--rounds must be >= 1");
  o = options_;
  o.dev = "";
  expect_error(o, "--dev is required");
  o = options_;
  o.out = o.model;
  expect_error(o, "--out must differ from --model");
  EXPECT_NE(::access(options_.out.c_str(), F_OK), 0) << "nothing written";
}

TEST_F(PruneJobTest, DataWithOtherLabelsIsAClearError) {
  const std::string path = dir_ + "/other.tsv";
  std::ofstream(path) << "label\ttext\nyes\tgood film\nno\tbad film\n";
  PruneJobOptions o = options_;
  o.data = path;
  absl::StatusOr<PruneJobResult> r = RunPruneJob(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("are not the model's"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace padless::prune
