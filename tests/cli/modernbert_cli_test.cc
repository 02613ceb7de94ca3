// ModernBERT end to end on the command line (issue 45): a tiny random ModernBERT directory with
// ModernBERT's kind of tokenizer.json (byte-level BPE, NFC, [CLS] $A [SEP]:
// tests/tokenize/data/modernbert) goes through `padless train --init-from` (a few steps on a
// small generated corpus with accents in NFC and NFD, on the CPU, keeping ModernBERT's dropout of
// 0 unless --dropout is given), `eval`, `predict` and `export-hf`; the in-process engine
// (InferenceEngine::Load, eager) must give predict's probabilities. With Python's transformers the
// directory is transformers' own (made from a fixed seed by modernbert_cli_reference.py), and
// transformers loads padless's export and must give the engine's logits within 1e-4; without it
// the directory is padless's export of a random ModernBERT and the transformers steps are skipped.
// The script runs in one worker process (tests/model_files/python_worker.h), which imports torch
// and transformers once.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/model_files/hf_weights.h"
#include "padless/models/encoder.h"
#include "padless/serve/inference_engine.h"
#include "python_worker.h"

// A namespace of its own: the unity build compiles this file with the other CLI tests.
namespace padless::cli::modernbert_cli_test {
namespace {

using model_files::testing::PythonWorkerReady;
using model_files::testing::RunPythonJob;
using testing::CliResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunPadless;
using testing::ScratchDir;
using testing::WriteFile;

const std::string kSource = PADLESS_SOURCE_DIR;
const std::string kTokenizer = kSource + "/tests/tokenize/data/modernbert/tokenizer.json";
const std::string kScript = kSource + "/tests/cli/modernbert_cli_reference.py";

bool HaveTransformers() { return PythonWorkerReady(kScript); }

// padless's own ModernBERT directory, for machines without transformers: a random tiny model
// exported by padless, with the tokenizer beside it.
void WritePadlessModernBert(const std::string& dir) {
  at::manual_seed(4545);
  models::EncoderClassifier model(models::EncoderConfig::ModernBertBase()
                                      .vocab_size(1240)
                                      .hidden(32)
                                      .layers(2)
                                      .heads(2)
                                      .ffn(48)
                                      .max_positions(128)
                                      .local_attention(8)
                                      .global_attn_every_n_layers(2)
                                      .pooling(models::Pooling::kMean)
                                      .num_labels(2));
  const absl::Status s = model_files::ExportHuggingFace(model, {"neg", "pos"}, dir);
  ASSERT_TRUE(s.ok()) << s;
  WriteFile(dir + "/tokenizer.json", ReadFile(kTokenizer));
}

// 48 short labeled texts; the positive words include accents in NFC, the negative "café" in NFD.
std::string Corpus() {
  const std::vector<std::string> pos = {"good",        "great", "fine",
                                        "caf\xC3\xA9", "joy",   "\xC3\xA9t\xC3\xA9"};
  const std::vector<std::string> neg = {"bad", "awful", "cafe\xCC\x81", "boring", "dull", "sad"};
  std::string tsv = "text\tlabel\n";
  for (size_t i = 0; i < 48; ++i) {
    const std::vector<std::string>& words = i % 2 == 1 ? pos : neg;
    for (size_t k = 0; k < 3 + i % 7; ++k) {
      absl::StrAppend(&tsv, k > 0 ? " " : "", words[(i * 5 + k * 3) % words.size()]);
    }
    absl::StrAppend(&tsv, i % 2 == 1 ? "\tpos\n" : "\tneg\n");
  }
  return tsv;
}

// Texts to classify: NFC and NFD accents, CJK and emoji, a run of spaces, an empty line.
const std::vector<std::string> kTexts = {"good caf\xC3\xA9 joy", "bad cafe\xCC\x81 boring dull",
                                         "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 a  b   c", "",
                                         "[MASK] fine"};

// predict's `label<TAB>probability` lines as the probability of "pos".
std::vector<double> PosProbabilities(const std::string& out) {
  std::vector<double> p;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> fields = absl::StrSplit(line, '\t');
    double v = NAN;
    EXPECT_TRUE(fields.size() == 2 && absl::SimpleAtod(fields[1], &v)) << line;
    p.push_back(fields[0] == "pos" ? v : 1 - v);
  }
  return p;
}

TEST(ModernBertCliTest, TrainEvalPredictExportAndServe) {
  const std::string scratch = ScratchDir("modernbert");
  const std::string init = scratch + "/init", out = scratch + "/trained";
  const std::string exported = scratch + "/exported";
  const bool python = HaveTransformers();
  if (python) {
    const absl::Status made =
        RunPythonJob(kScript, {"make", "--out", init, "--tokenizer", kTokenizer});
    ASSERT_TRUE(made.ok()) << made;
  } else {
    ASSERT_NO_FATAL_FAILURE(WritePadlessModernBert(init));
  }
  const std::string data = scratch + "/train.tsv", texts = scratch + "/texts.txt";
  WriteFile(data, Corpus());
  std::string lines;
  for (const std::string& t : kTexts) absl::StrAppend(&lines, t, "\n");
  WriteFile(texts, lines);

  CliResult r = RunPadless({"train", "--data", data, "--out", out, "--init-from", init,
                            "--max-steps", "4", "--max-len", "64", "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("tokenizer: " + init + "/tokenizer.json"));
  EXPECT_THAT(r.err, HasSubstr("init: Hugging Face " + init));
  // Without --dropout the model keeps ModernBERT's own (none), as transformers fine-tunes it; a
  // given --dropout sets both.
  EXPECT_THAT(r.err, HasSubstr("dropout 0, attention 0 (its own)"));
  nlohmann::json config = nlohmann::json::parse(ReadFile(out + "/config.json"));
  EXPECT_EQ(config["dropout"].get<double>(), 0.0);
  EXPECT_EQ(config["attention_dropout"].get<double>(), 0.0);
  const std::string given = scratch + "/given_dropout";
  r = RunPadless({"train", "--data", data, "--out", given, "--init-from", init, "--max-steps", "1",
                  "--max-len", "64", "--device", "cpu", "--dropout", "0.25"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  config = nlohmann::json::parse(ReadFile(given + "/config.json"));
  EXPECT_EQ(config["dropout"].get<double>(), 0.25);
  EXPECT_EQ(config["attention_dropout"].get<double>(), 0.25);
  r = RunPadless({"eval", "--model", out, "--data", data, "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(48 examples)"));
  r = RunPadless({"predict", "--model", out, "--data", texts, "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<double> predicted = PosProbabilities(r.out);
  ASSERT_EQ(predicted.size(), kTexts.size()) << r.out;
  r = RunPadless({"export-hf", "--model", out, "--out", exported});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(exported + "/tokenizer.json"), ReadFile(init + "/tokenizer.json"));
  EXPECT_THAT(ReadFile(exported + "/tokenizer_config.json"), HasSubstr("PreTrainedTokenizerFast"));

  // The engine, eager on the CPU in fp32, gives predict's probabilities.
  absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> engine =
      serve::InferenceEngine::Load(out);
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::vector<serve::EngineRequest> requests(kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) requests[i].text = kTexts[i];
  absl::StatusOr<std::vector<absl::StatusOr<serve::EngineResult>>> results =
      (*engine)->Run(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<std::vector<float>> scores;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    ASSERT_TRUE((*results)[i].ok()) << (*results)[i].status();
    EXPECT_NEAR((*results)[i]->probabilities.at(1), predicted[i], 1e-6) << i;
    scores.push_back((*results)[i]->scores);
  }
  // Not yet: int8 serving of ModernBERT (pre-LN) is refused with the reason.
  serve::EngineOptions int8;
  int8.int8_weights = true;
  absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> refused =
      serve::InferenceEngine::Load(out, int8);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("post-LN"));
  serve::EngineOptions fp8;  // FP8 weights too: they live in the post-LN fused inference layers
  fp8.amp = models::AmpMode::kFp8;
  refused = serve::InferenceEngine::Load(out, fp8);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("pre-LN"));

  if (!python) GTEST_SKIP() << "no Python transformers: the export was not loaded by it";
  const std::string reference = scratch + "/reference.json";
  const absl::Status logits =
      RunPythonJob(kScript, {"logits", "--model", exported, "--texts", texts, "--out", reference});
  ASSERT_TRUE(logits.ok()) << logits;
  const nlohmann::json ref = nlohmann::json::parse(ReadFile(reference));
  ASSERT_EQ(ref["logits"].size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const std::vector<float> want = ref["logits"][i].get<std::vector<float>>();
    ASSERT_EQ(want.size(), scores[i].size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(scores[i][k], want[k], 1e-4) << i;
    EXPECT_NEAR(ref["probabilities"][i][1].get<double>(), predicted[i], 1e-4) << i;
  }
}

}  // namespace
}  // namespace padless::cli::modernbert_cli_test
