// `padless embed` (issue 44): the embeddings of a corpus into a .npy file. Checked against the
// engine itself (InferenceEngine::Run + FinishEmbedding on the same texts), with normalization,
// Matryoshka --dimensions, prompts, chunking (--batch), every corpus format predict reads and
// --attention; and the refusals: a classifier without --pooling, a non-.npy --out, missing flags
// and files, an empty corpus, a CUDA-only attention backend on the CPU, each leaving no .npy
// behind. The model directories are tiny random BERT models exported here: a sentence-transformers
// directory (modules.json, mean pooling, Normalize, prompts) and a classifier with its head.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "padless/base/directory.h"
#include "padless/model_files/hf_weights.h"
#include "padless/model_files/safetensors.h"
#include "padless/models/encoder.h"
#include "padless/serve/inference_engine.h"
#include "padless/tokenize/tokenizer.h"

namespace padless::cli {
namespace {

using testing::CliResult;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunPadless;
using testing::ScratchDir;
using testing::WriteFile;

constexpr int64_t kHidden = 16;
constexpr const char* kWords[] = {"good",   "bad",    "film", "plot", "great",
                                  "awful",  "actors", "the",  "a",    "story",
                                  "boring", "funny",  "and",  "was",  "very"};
// Five texts; the first comes back as the last, so two rows must match.
const std::vector<std::string> kTexts = {"good film", "the plot was very boring",
                                         "great actors and a funny story", "awful", "good film"};

tokenize::Tokenizer SmallTokenizer() {
  std::vector<std::string> sentences;
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int k = 0; k < 8; ++k) s += std::string(kWords[(i * 7 + k * 3) % 15]) + " ";
    sentences.push_back(s);
  }
  tokenize::TrainOptions options;
  options.vocab_size = 40;
  absl::StatusOr<tokenize::Tokenizer> t =
      tokenize::Tokenizer::TrainFromSentences(sentences, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

// A random BERT sequence classifier (labels neg, pos) in Hugging Face's layout; without
// `with_head`, its weights lack classifier.* as a plain encoder's (a sentence-transformers
// checkpoint's) do.
void WriteEmbedTestModelDir(const std::string& dir, bool with_head) {
  ASSERT_TRUE(base::MakeDirectories(dir).ok()) << dir;
  tokenize::Tokenizer tokenizer = SmallTokenizer();
  at::manual_seed(11);
  models::EncoderClassifier model(models::EncoderConfig()
                                      .vocab_size(tokenizer.vocab_size())
                                      .hidden(kHidden)
                                      .heads(2)
                                      .ffn(32)
                                      .layers(2)
                                      .max_positions(64)
                                      .num_labels(2)
                                      .classifier_hidden(models::ClassifierHidden::kTanh));
  absl::Status s = model_files::ExportHuggingFace(model, {"neg", "pos"}, dir);
  ASSERT_TRUE(s.ok()) << s;
  s = tokenizer.Save(dir + "/" + tokenizer.file_name());
  ASSERT_TRUE(s.ok()) << s;
  if (with_head) return;
  const std::string weights = dir + "/" + model_files::kHfWeightsFile;
  std::vector<std::pair<std::string, at::Tensor>> encoder_only;
  {
    absl::StatusOr<model_files::SafetensorsFile> f = model_files::SafetensorsFile::Open(weights);
    ASSERT_TRUE(f.ok()) << f.status();
    for (const auto& entry : f->entries()) {
      if (!absl::StartsWith(entry.first, "classifier.")) {
        encoder_only.emplace_back(entry.first, *f->Tensor(entry.first, /*copy=*/true));
      }
    }
  }
  s = model_files::WriteSafetensors(weights, encoder_only);
  ASSERT_TRUE(s.ok()) << s;
}

// The encoder above as sentence-transformers saves an embedding model: Transformer, mean Pooling,
// Normalize; two prompts and no default one.
void WriteSentenceTransformerDir(const std::string& dir) {
  ASSERT_NO_FATAL_FAILURE(WriteEmbedTestModelDir(dir, /*with_head=*/false));
  WriteFile(dir + "/modules.json", R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])");
  ASSERT_TRUE(base::MakeDirectories(dir + "/1_Pooling").ok());
  ASSERT_TRUE(base::MakeDirectories(dir + "/2_Normalize").ok());
  WriteFile(dir + "/1_Pooling/config.json",
            absl::StrCat(R"({"word_embedding_dimension": )", kHidden, R"(,
  "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
  "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false})"));
  WriteFile(dir + "/sentence_bert_config.json",
            R"({"max_seq_length": 64, "do_lower_case": false})");
  WriteFile(dir + "/config_sentence_transformers.json", R"({
  "model_type": "SentenceTransformer",
  "prompts": {"query": "the story was ", "passage": "a film "},
  "default_prompt_name": null, "similarity_fn_name": "cosine"})");
}

struct Npy {
  int64_t rows = -1, cols = -1;
  std::vector<float> values;
  std::vector<float> Row(int64_t r) const {
    return std::vector<float>(values.begin() + r * cols, values.begin() + (r + 1) * cols);
  }
};

// Reads a float32 C-order 2-D .npy file; fails the test on anything else.
Npy ReadNpy(const std::string& path) {
  Npy npy;
  const std::string bytes = ReadFile(path);
  EXPECT_GE(bytes.size(), 10u) << path;
  if (bytes.size() < 10 || bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) != 0) {
    ADD_FAILURE() << path << " is not a .npy v1.0 file";
    return npy;
  }
  const size_t offset = 10 + static_cast<uint8_t>(bytes[8]) + 256 * static_cast<uint8_t>(bytes[9]);
  EXPECT_EQ(offset % 64, 0u);
  const std::string header = bytes.substr(10, offset - 10);
  EXPECT_THAT(header, HasSubstr("'descr': '<f4', 'fortran_order': False, 'shape': ("));
  const size_t open = header.find("'shape': (") + 10;
  const size_t comma = header.find(", ", open), close = header.find(')', open);
  if (!absl::SimpleAtoi(header.substr(open, comma - open), &npy.rows) ||
      !absl::SimpleAtoi(header.substr(comma + 2, close - comma - 2), &npy.cols)) {
    ADD_FAILURE() << "bad shape in " << header;
    return npy;
  }
  EXPECT_EQ(bytes.size() - offset, static_cast<size_t>(npy.rows * npy.cols) * sizeof(float));
  npy.values.resize((bytes.size() - offset) / sizeof(float));
  std::memcpy(npy.values.data(), bytes.data() + offset, npy.values.size() * sizeof(float));
  return npy;
}

double Norm(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  return std::sqrt(sum);
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, double tolerance,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance) << what << " " << i;
}

class EmbedCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = ScratchDir("embed");
    st_dir_ = scratch_ + "/st";
    classifier_dir_ = scratch_ + "/classifier";
    ASSERT_NO_FATAL_FAILURE(WriteSentenceTransformerDir(st_dir_));
    ASSERT_NO_FATAL_FAILURE(WriteEmbedTestModelDir(classifier_dir_, /*with_head=*/true));
    texts_ = scratch_ + "/texts.txt";
    std::string lines;
    for (const std::string& t : kTexts) lines += t + "\n";
    WriteFile(texts_, lines);
    out_ = scratch_ + "/out.npy";
    WriteFile(out_, "poison");  // a run must replace it whole, or leave it alone
  }

  // The engine's embedding of `text`, finished as embed finishes it.
  std::vector<float> EngineEmbedding(const std::string& dir, const std::string& text,
                                     bool normalize, int64_t dimensions,
                                     std::optional<models::SentencePooling> pooling = {}) {
    serve::EngineOptions options;
    options.device = c10::Device(c10::kCPU);
    options.pooling = pooling;
    absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> engine =
        serve::InferenceEngine::Load(dir, options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    if (!engine.ok()) return {};
    serve::EngineRequest request;
    request.text = text;
    absl::StatusOr<std::vector<absl::StatusOr<serve::EngineResult>>> results =
        (*engine)->Run({request});
    EXPECT_TRUE(results.ok() && results->size() == 1 && (*results)[0].ok());
    if (!results.ok() || results->size() != 1 || !(*results)[0].ok()) return {};
    std::vector<float> v = (*results)[0]->embedding;
    EXPECT_TRUE(serve::FinishEmbedding(v, normalize, dimensions).ok());
    return v;
  }

  // Runs embed on `dir` with `flags`, expecting success; returns the written array.
  Npy Embed(const std::string& dir, std::vector<std::string> flags, const std::string& data) {
    std::vector<std::string> args = {"embed", "--model", dir,        "--data", data,
                                     "--out", out_,      "--device", "cpu"};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = RunPadless(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    return ReadNpy(out_);
  }

  // Exit `code`, a message with `message`, and the poisoned --out left as it was.
  void ExpectRefused(const CliResult& r, int code, const std::string& message) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_THAT(r.err, HasSubstr("padless embed: error: "));
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_EQ(ReadFile(out_), "poison");
  }

  std::string scratch_, st_dir_, classifier_dir_, texts_, out_;
};

TEST_F(EmbedCommandTest, WritesOneUnitRowPerTextAsTheEngineEmbedsIt) {
  const CliResult r =
      RunPadless({"embed", "--model", st_dir_, "--data", texts_, "--out", out_, "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("embedded 5 texts ("));
  EXPECT_THAT(r.err, HasSubstr("texts/s"));
  const Npy npy = ReadNpy(out_);
  ASSERT_EQ(npy.rows, 5);
  ASSERT_EQ(npy.cols, kHidden);
  for (int64_t i = 0; i < npy.rows; ++i) {
    EXPECT_NEAR(Norm(npy.Row(i)), 1.0, 1e-5) << i;
    ExpectNear(npy.Row(i), EngineEmbedding(st_dir_, kTexts[i], true, 0), 1e-5, kTexts[i]);
  }
  // The same text twice: the same vector (batches never change a text's result, up to rounding).
  ExpectNear(npy.Row(4), npy.Row(0), 1e-6, "repeated text");
  EXPECT_GT(std::fabs(npy.Row(1)[0] - npy.Row(0)[0]) + std::fabs(npy.Row(1)[1] - npy.Row(0)[1]),
            1e-4);  // different texts differ
  const std::vector<std::string> files = base::ListDirectory(scratch_);
  for (const std::string& f : files) EXPECT_FALSE(absl::StrContains(f, ".tmp.")) << f;
}

TEST_F(EmbedCommandTest, NoNormalizeAndDimensions) {
  Npy raw = Embed(st_dir_, {"--no-normalize"}, texts_);
  ASSERT_EQ(raw.rows, 5);
  ASSERT_EQ(raw.cols, kHidden);
  ExpectNear(raw.Row(2), EngineEmbedding(st_dir_, kTexts[2], false, 0), 1e-5, "unnormalized");
  EXPECT_GT(std::fabs(Norm(raw.Row(2)) - 1.0), 1e-3);  // a random model's mean is not unit
  const Npy cut = Embed(st_dir_, {"--dimensions", "8"}, texts_);
  ASSERT_EQ(cut.rows, 5);
  ASSERT_EQ(cut.cols, 8);
  for (int64_t i = 0; i < cut.rows; ++i) {
    EXPECT_NEAR(Norm(cut.Row(i)), 1.0, 1e-5) << i;
    ExpectNear(cut.Row(i), EngineEmbedding(st_dir_, kTexts[i], true, 8), 1e-5, kTexts[i]);
  }
}

TEST_F(EmbedCommandTest, SmallBatchesAndEveryCorpusFormatGiveTheSameRows) {
  const Npy whole = Embed(st_dir_, {}, texts_);
  ASSERT_EQ(whole.rows, 5);
  const Npy chunked = Embed(st_dir_, {"--batch", "2"}, texts_);  // chunks of 2, 2, 1
  ASSERT_EQ(chunked.rows, 5);
  ExpectNear(chunked.values, whole.values, 1e-6, "--batch 2");
  std::string tsv = "id\ttext\n", jsonl;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    absl::StrAppend(&tsv, i, "\t", kTexts[i], "\n");
    absl::StrAppend(&jsonl, R"({"text": ")", kTexts[i], R"(", "label": "pos"})", "\n");
  }
  WriteFile(scratch_ + "/texts.tsv", tsv);
  WriteFile(scratch_ + "/texts.jsonl", jsonl);
  for (const char* name : {"texts.tsv", "texts.jsonl"}) {
    WriteFile(out_, "poison");
    const Npy npy = Embed(st_dir_, {}, absl::StrCat(scratch_, "/", name));
    ASSERT_EQ(npy.rows, 5) << name;
    ExpectNear(npy.values, whole.values, 1e-6, name);
  }
}

TEST_F(EmbedCommandTest, PromptNamePutsThePromptBeforeEachText) {
  const Npy npy = Embed(st_dir_, {"--prompt-name", "query"}, texts_);
  ASSERT_EQ(npy.rows, 5);
  ExpectNear(npy.Row(3), EngineEmbedding(st_dir_, "the story was awful", true, 0), 1e-5,
             "prompted");
  WriteFile(out_, "poison");
  ExpectRefused(RunPadless({"embed", "--model", st_dir_, "--data", texts_, "--out", out_,
                            "--device", "cpu", "--prompt-name", "title"}),
                1, "--prompt-name title: " + st_dir_ + " has the prompts passage, query");
}

TEST_F(EmbedCommandTest, AClassifierNeedsPooling) {
  ExpectRefused(RunPadless({"embed", "--model", classifier_dir_, "--data", texts_, "--out", out_,
                            "--device", "cpu"}),
                1, classifier_dir_ + " is a classifier; pass --pooling to embed with its encoder");
  const Npy npy = Embed(classifier_dir_, {"--pooling", "mean"}, texts_);
  ASSERT_EQ(npy.rows, 5);
  ASSERT_EQ(npy.cols, kHidden);
  ExpectNear(npy.Row(1),
             EngineEmbedding(classifier_dir_, kTexts[1], true, 0, models::SentencePooling::kMean),
             1e-5, "--pooling mean");
}

TEST_F(EmbedCommandTest, BadFlagsAreUsageErrors) {
  const std::vector<std::string> base_args = {"embed", "--model",  st_dir_, "--data",
                                              texts_,  "--device", "cpu"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base_args;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunPadless(args);
  };
  const std::string txt = scratch_ + "/foo.txt";
  WriteFile(txt, "kept");
  CliResult r = with({"--out", txt});
  ExpectRefused(r, 2, "embed writes NumPy .npy files");
  EXPECT_THAT(r.err, HasSubstr("(see `padless embed --help`)"));
  EXPECT_EQ(ReadFile(txt), "kept");
  ExpectRefused(RunPadless({"embed", "--data", texts_, "--out", out_}), 2,
                "--model DIR is required");
  ExpectRefused(with({}), 2, "--out FILE.npy is required");
  ExpectRefused(with({"--out", out_, "--pooling", "median"}), 2, "--pooling: ");
  ExpectRefused(with({"--out", out_, "--dimensions", "-1"}), 2, "--dimensions must be >= 0");
  ExpectRefused(with({"--out", out_, "--batch", "0"}), 2, "--batch must be >= 1, got 0");
  ExpectRefused(with({"--out", out_, "--max-len", "2"}), 2, "--max-len must be >= 3, got 2");
  ExpectRefused(with({"--out", out_, "extra"}), 2, "unexpected argument 'extra'");
  r = RunPadless({"embed", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--pooling", "--normalize", "--dimensions", "--prompt-name", "--batch"}) {
    EXPECT_THAT(r.out, HasSubstr(flag));
  }
}

// --attention: a CPU backend embeds as the default does; a CUDA-only one is refused on the CPU
// (by the engine, at load: a failure) and writes nothing.
TEST_F(EmbedCommandTest, AttentionBackends) {
  const Npy grouped = Embed(st_dir_, {}, texts_);  // auto: length groups on the CPU
  ASSERT_EQ(grouped.rows, 5);
  WriteFile(out_, "poison");
  const Npy reference = Embed(st_dir_, {"--attention", "reference"}, texts_);
  ASSERT_EQ(reference.rows, 5);
  ExpectNear(reference.values, grouped.values, 1e-5, "--attention reference");
  WriteFile(out_, "poison");
  ExpectRefused(RunPadless({"embed", "--model", st_dir_, "--data", texts_, "--out", out_,
                            "--device", "cpu", "--attention", "fa3"}),
                1, "attention fa3: runs on CUDA devices only, not on device cpu");
  const CliResult help = RunPadless({"embed", "--help"});
  EXPECT_THAT(help.out, HasSubstr("--attention"));
}

TEST_F(EmbedCommandTest, BadInputsFailAndWriteNothing) {
  auto run = [&](const std::string& dir, const std::string& data,
                 std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"embed", "--model", dir,        "--data", data,
                                     "--out", out_,      "--device", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunPadless(args);
  };
  ExpectRefused(run(st_dir_, scratch_ + "/missing.txt"), 1, "missing.txt");
  ExpectRefused(run(scratch_ + "/no_model", texts_), 1, "no_model");
  WriteFile(scratch_ + "/header_only.tsv", "text\tlabel\n");
  ExpectRefused(run(st_dir_, scratch_ + "/header_only.tsv"), 1, "header_only.tsv: no examples");
  // No --data: stdin, which RunPadless empties.
  ExpectRefused(RunPadless({"embed", "--model", st_dir_, "--out", out_, "--device", "cpu"}), 1,
                "stdin: no texts");
  ExpectRefused(run(st_dir_, texts_, {"--dimensions", "99"}), 1,
                "--dimensions 99: " + st_dir_ + "'s embeddings have 16 values");
  // A plain encoder (no head, no modules.json): the engine's refusal, with the way out.
  const std::string plain = scratch_ + "/plain";
  ASSERT_NO_FATAL_FAILURE(WriteEmbedTestModelDir(plain, /*with_head=*/false));
  ExpectRefused(run(plain, texts_), 1, "to embed with its encoder, pass --pooling");
}

}  // namespace
}  // namespace padless::cli
