// train::RunTrainJob as a library call: option problems are InvalidArgument naming the option
// (the CLI's usage errors) and come before any file is touched; a small run writes a loadable
// model directory, holds out a seeded dev share and evaluates on it; data problems name the file.
#include "padless/train/train_job.h"

#include <ATen/ATen.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/base/read_file.h"
#include "padless/model_files/hf_config.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/model_io.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/train/training_defaults.h"
#include "padless/tokenize/special_tokens.h"

namespace padless::train {
namespace {

using ::testing::HasSubstr;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string WriteData(const std::string& name, int rows, bool two_labels = true) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  out << "label\ttext\n";
  for (int i = 0; i < rows; ++i) {
    out << (two_labels && i % 2 ? "pos\ta truly wonderful , moving film number "
                                : "neg\ta dull and tedious mess , scene ")
        << i << "\n";
  }
  return path;
}

// Fast options: tiny preset, a small vocabulary, a few steps on the CPU.
TrainJobOptions SmallJob(const std::string& data, const std::string& out) {
  TrainJobOptions job;
  job.data = data;
  job.out = out;
  job.vocab_size = 50;
  job.max_len = 32;
  job.max_tokens = 256;
  job.train.epochs(1).max_steps(2);
  job.device = c10::Device(c10::kCPU);
  job.quiet = true;
  return job;
}

TEST(TrainJobTest, OptionProblemsNameTheOption) {
  const TrainJobOptions ok = SmallJob("x.tsv", "/nonexistent/out");
  ASSERT_TRUE(ValidateTrainJobOptions(ok).ok());
  struct Case {
    void (*change)(TrainJobOptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](TrainJobOptions& j) { j.data.clear(); }, "--data is required"},
      {[](TrainJobOptions& j) { j.out.clear(); }, "--out is required"},
      {[](TrainJobOptions& j) { j.max_len = 2; }, "--max-len must be >= 3, got 2"},
      {[](TrainJobOptions& j) { j.dev_fraction = 1.0; }, "--dev-fraction must be in [0, 1)"},
      {[](TrainJobOptions& j) { j.preset = "huge"; }, "huge"},
      {[](TrainJobOptions& j) { j.batching = "magic"; }, "--batching: unknown strategy 'magic'"},
      {[](TrainJobOptions& j) { j.max_tokens = 16; }, "--max-tokens (16) must be >= --max-len"},
      {[](TrainJobOptions& j) { j.train.epochs(0); }, "--epochs must be >= 1"},
      {[](TrainJobOptions& j) { j.train.grad_accum(0); }, "--grad-accum must be >= 1"},
      {[](TrainJobOptions& j) { j.train.clip_norm(-1); }, "--clip-norm must be a finite number"},
      {[](TrainJobOptions& j) { j.train.clip_norm(std::nan("")); }, "--clip-norm must be"},
      {[](TrainJobOptions& j) { j.train.max_nonfinite_steps(-1); }, "--max-nonfinite-steps"},
  };
  for (const Case& c : cases) {
    TrainJobOptions job = ok;
    c.change(job);
    const absl::Status s = ValidateTrainJobOptions(job);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
    // RunTrainJob reports the same problem before it touches a file.
    EXPECT_EQ(RunTrainJob(job).status(), s);
  }
}

TEST(TrainJobTest, EveryRegisteredStrategyNameIsAccepted) {
  for (const std::string& name : batching::StrategyNames()) {
    TrainJobOptions job = SmallJob("x.tsv", "/nonexistent/out");
    job.batching = name;
    EXPECT_TRUE(ValidateTrainJobOptions(job).ok()) << name;
  }
}

TEST(TrainJobTest, TrainsSavesAndEvaluatesAHeldOutShare) {
  const std::string out = ::testing::TempDir() + "/train_job_model";
  TrainJobOptions job = SmallJob(WriteData("train_job.tsv", 100), out);
  job.dev_fraction = 0.2;
  absl::StatusOr<TrainJobResult> result = RunTrainJob(job);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->model_dir, out);
  EXPECT_EQ(result->train_examples, 80);
  EXPECT_EQ(result->dev_examples, 20);
  EXPECT_EQ(result->train.steps, 2);
  ASSERT_TRUE(result->dev.has_value());
  EXPECT_EQ(result->dev->metrics.examples, 20);
  for (const char* file : {model_files::kConfigFile, model_files::kWeightsFile, "tokenizer.model"}) {
    EXPECT_TRUE(Exists(out + "/" + file)) << file;
  }
  EXPECT_TRUE(Exists(out + "/train_log.csv"));
  EXPECT_TRUE(model_files::LoadModelDir(out, c10::Device(c10::kCPU)).ok());

  // A second run into the same directory reuses its tokenizer.
  absl::StatusOr<TrainJobResult> again = RunTrainJob(job);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->dev_examples, 20);  // the same seeded split
}

// Issue 13.4: the default vocabulary (16000) is far more than 100 short rows support; the job
// trains the vocabulary the corpus supports instead of failing with "Vocabulary size too high".
TEST(TrainJobTest, VocabularyTooLargeForTheCorpusShrinksToFit) {
  const std::string out = ::testing::TempDir() + "/train_job_soft_vocab";
  TrainJobOptions job = SmallJob(WriteData("train_job_soft_vocab.tsv", 100), out);
  job.vocab_size = 16000;
  absl::StatusOr<TrainJobResult> result = RunTrainJob(job);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<model_files::LoadedModel> loaded = model_files::LoadModelDir(out, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_GT(loaded->tokenizer.vocab_size(), tokenize::kNumSpecialTokens);
  EXPECT_LT(loaded->tokenizer.vocab_size(), 16000);
  EXPECT_EQ(loaded->config.vocab_size(), loaded->tokenizer.vocab_size());
}

// The peak learning rate of the run in `out`: the first optimizer step's (no warmup at 2 steps).
double FirstLoggedLr(const std::string& out) {
  std::ifstream csv(out + "/train_log.csv");
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  const size_t lr_begin = row.find(',', row.find(',', row.find(',') + 1) + 1) + 1;
  return std::stod(row.substr(lr_begin, row.find(',', lr_begin) - lr_begin));
}

// Issue 13.4: without lr / warmup_fraction the job uses the table of training_defaults.h for the
// preset trained from scratch; given ones win.
TEST(TrainJobTest, LearningRateDefaultsFollowThePreset) {
  const std::string data = WriteData("train_job_lr.tsv", 40);
  struct Case {
    const char* preset;
    std::optional<double> lr;
    double expected;
  };
  for (const Case& c : {Case{"tiny", std::nullopt, 5e-4}, Case{"small", std::nullopt, 1e-4},
                        Case{"tiny", 7e-4, 7e-4}}) {
    const std::string out = ::testing::TempDir() + "/train_job_lr_" + c.preset;
    TrainJobOptions job = SmallJob(data, out);
    job.preset = c.preset;
    job.lr = c.lr;
    ASSERT_EQ(DefaultOptimization(c.preset)->warmup_fraction * 2 < 0.5, true);
    absl::StatusOr<TrainJobResult> result = RunTrainJob(job);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_DOUBLE_EQ(FirstLoggedLr(out), c.expected) << c.preset;
  }
  TrainJobOptions init = SmallJob(data, "/nonexistent/out");
  EXPECT_EQ(TrainingOrigin(init), "tiny");
  init.init_from = "/some/model";
  EXPECT_EQ(TrainingOrigin(init), kPretrainedOrigin);
}

// Issue 13.4: without max_tokens the token budget is batch_size sequences of the corpus's mean
// length, so short texts get many optimizer steps per epoch; an explicit budget means what it says.
TEST(TrainJobTest, DefaultTokenBudgetGivesShortTextsManySteps) {
  const std::string data = WriteData("train_job_geometry.tsv", 400);
  TrainJobOptions job = SmallJob(data, ::testing::TempDir() + "/train_job_geometry");
  job.max_len = 512;
  job.max_tokens = 0;
  job.batch_size = 16;
  job.epochs = 1;
  job.train.max_steps(0);
  absl::StatusOr<TrainJobResult> derived = RunTrainJob(job);
  ASSERT_TRUE(derived.ok()) << derived.status();
  // About 400 / 16 = 25 batches; packing may fill a batch a little past 16 sequences on average.
  EXPECT_GE(derived->train.steps, 20);
  EXPECT_LE(derived->train.steps, 30);
  EXPECT_LE(derived->train.sequences, 400);

  job.max_tokens = 16384;
  absl::StatusOr<TrainJobResult> explicit_budget = RunTrainJob(job);
  ASSERT_TRUE(explicit_budget.ok()) << explicit_budget.status();
  EXPECT_EQ(explicit_budget->train.steps, 1);  // 400 short rows fit one batch of 16384 tokens
}

TEST(TrainJobTest, DataProblemsNameTheFile) {
  const std::string one_label = WriteData("train_job_one_label.tsv", 20, /*two_labels=*/false);
  absl::StatusOr<TrainJobResult> r =
      RunTrainJob(SmallJob(one_label, ::testing::TempDir() + "/train_job_one_label"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(one_label + ": needs at least two distinct labels"));

  r = RunTrainJob(
      SmallJob(::testing::TempDir() + "/missing.tsv", ::testing::TempDir() + "/train_job_missing"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("missing.tsv"));
}

// Issue 45: --max-len up to the model's position limit. A preset grows its position table to
// max_len (8192 here, ModernBERT's limit); an --init-from model's limit is checked from its
// config.json before the data is read or tokenized, for padless and Hugging Face directories.
TEST(TrainJobTest, MaxLenIsCheckedAgainstTheInitFromModelsPositions) {
  TrainJobOptions preset = SmallJob("x.tsv", "/nonexistent/out");
  preset.max_len = 8192;
  preset.max_tokens = 8192;
  EXPECT_TRUE(ValidateTrainJobOptions(preset).ok());

  const std::string padless_dir = ::testing::TempDir() + "/max_len_padless_model";
  const std::string hf_dir = ::testing::TempDir() + "/max_len_hf_model";
  for (const std::string& dir : {padless_dir, hf_dir}) ::mkdir(dir.c_str(), 0755);
  std::ofstream(padless_dir + "/config.json")
      << models::EncoderConfig::Tiny().vocab_size(50).max_positions(512).ToJson();
  std::ofstream(hf_dir + "/config.json")
      << R"({"model_type": "roberta", "architectures": ["RobertaForSequenceClassification"],
             "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 1,
             "num_attention_heads": 2, "intermediate_size": 64,
             "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1,
             "hidden_act": "gelu", "layer_norm_eps": 1e-5})";
  for (const std::string& dir : {padless_dir, hf_dir}) {
    TrainJobOptions job = SmallJob(::testing::TempDir() + "/not_read.tsv", "/nonexistent/out");
    job.init_from = dir;
    job.max_len = 8192;
    job.max_tokens = 8192;
    const absl::Status s = RunTrainJob(job).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << dir;
    EXPECT_THAT(s.message(),
                HasSubstr("--max-len 8192 is longer than the --init-from model reads"));
    EXPECT_THAT(s.message(), HasSubstr("512 positions"));
    EXPECT_THAT(s.message(), HasSubstr("give --max-len 512 or less"));
    EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("not_read.tsv")));
  }
}

// A fresh directory under the test temp dir (an earlier run's model would be resumed).
std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  return dir;
}

// A tiny random Hugging Face model of `config` in `dir`, with ModernBERT's kind of tokenizer.json
// (1240 ids), as transformers would save it.
void WriteHfModel(models::EncoderConfig config, const std::string& dir) {
  at::manual_seed(7);
  models::EncoderClassifier model(config.vocab_size(1240).hidden(32).layers(2).heads(2).ffn(48));
  const absl::Status s = model_files::ExportHuggingFace(model, {"neg", "pos"}, dir);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<std::string> tokenizer = base::ReadFile(
      std::string(PADLESS_SOURCE_DIR) + "/tests/tokenize/data/modernbert/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::ofstream(dir + "/tokenizer.json") << *tokenizer;
}

using Dropouts = std::pair<double, double>;

// The dropout and attention dropout of the model a job trained from `init_from` (empty: a new
// model) with `dropout`; -1 for both when the job failed.
Dropouts TrainedDropout(const std::string& data, const std::string& init_from,
                        std::optional<double> dropout, const std::string& out) {
  TrainJobOptions job = SmallJob(data, FreshDir(out));
  job.init_from = init_from;
  job.dropout = dropout;
  job.train.max_steps(1);
  absl::StatusOr<TrainJobResult> result = RunTrainJob(job);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {-1, -1};
  const std::string path = result->model_dir + "/" + model_files::kConfigFile;
  absl::StatusOr<models::EncoderConfig> config =
      models::EncoderConfig::FromJson(*base::ReadFile(path), path);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return {-1, -1};
  return {config->dropout(), config->attention_dropout()};
}

// An imported model keeps its own dropout unless the job gives one: ModernBERT's config.json has
// none (as transformers fine-tunes it), BERT's hidden_dropout_prob and
// attention_probs_dropout_prob are read, and so is a padless model's own; a new model gets 0.1.
TEST(TrainJobTest, InitFromKeepsTheModelsDropoutUnlessOneIsGiven) {
  const std::string data = WriteData("train_job_dropout.tsv", 24);
  const std::string modernbert = FreshDir("train_job_dropout_modernbert");
  ASSERT_NO_FATAL_FAILURE(WriteHfModel(models::EncoderConfig::ModernBertBase()
                                           .max_positions(128)
                                           .local_attention(8)
                                           .global_attn_every_n_layers(2)
                                           .pooling(models::Pooling::kMean),
                                       modernbert));
  const std::string bert = FreshDir("train_job_dropout_bert");
  ASSERT_NO_FATAL_FAILURE(WriteHfModel(
      models::EncoderConfig().max_positions(64).classifier_hidden(models::ClassifierHidden::kTanh),
      bert));
  nlohmann::json config = nlohmann::json::parse(*base::ReadFile(bert + "/config.json"));
  config["hidden_dropout_prob"] = 0.2;
  config["attention_probs_dropout_prob"] = 0.15;
  std::ofstream(bert + "/config.json") << config.dump();

  EXPECT_EQ(TrainedDropout(data, modernbert, std::nullopt, "train_job_dropout_mb_own"),
            Dropouts(0.0, 0.0));
  EXPECT_EQ(TrainedDropout(data, modernbert, 0.25, "train_job_dropout_mb_given"),
            Dropouts(0.25, 0.25));
  // A ModernBERT config.json's mlp_dropout and attention_dropout are read.
  config = nlohmann::json::parse(*base::ReadFile(modernbert + "/config.json"));
  config["mlp_dropout"] = 0.05;
  config["attention_dropout"] = 0.125;
  absl::StatusOr<model_files::HfConfig> parsed = model_files::ParseHfConfig(config.dump(), "x");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(Dropouts(parsed->encoder.dropout(), parsed->encoder.attention_dropout()),
            Dropouts(0.05, 0.125));
  EXPECT_EQ(TrainedDropout(data, bert, std::nullopt, "train_job_dropout_bert_own"),
            Dropouts(0.2, 0.15));
  EXPECT_EQ(TrainedDropout(data, bert, 0.0, "train_job_dropout_bert_given"), Dropouts(0.0, 0.0));
  // The padless model trained from BERT's, used as init_from in turn.
  const std::string padless_model = ::testing::TempDir() + "/train_job_dropout_bert_own";
  EXPECT_EQ(TrainedDropout(data, padless_model, std::nullopt, "train_job_dropout_padless_own"),
            Dropouts(0.2, 0.15));
  EXPECT_EQ(TrainedDropout(data, padless_model, 0.05, "train_job_dropout_padless_given"),
            Dropouts(0.05, 0.05));
  EXPECT_EQ(TrainedDropout(data, "", std::nullopt, "train_job_dropout_new"),
            Dropouts(kNewModelDropout, kNewModelDropout));
}

}  // namespace
}  // namespace padless::train
