// Parity of the embedding and reranker engine with sentence-transformers (issue 44), in fp32 on
// the CPU: the tiny models of embedding_fixtures.h (every pooling mode, Dense + Normalize, a
// cross-encoder) and all-MiniLM-L6-v2 when its directory is present, against the golden outputs
// of SentenceTransformer.encode and CrossEncoder.predict in tests/serve/data/
// (make_embedding_goldens.py writes them; `ctest -R serve_embedding_goldens` checks them against
// a fresh sentence-transformers where it is installed). Targets: cosine >= 0.99999 per text and a
// small largest difference; rerank probabilities and raw scores within 1e-4, in the same order.
// Each golden records the checksum of the weights it was computed from: a fixture that writes
// other weights fails FixtureWritesTheGoldensWeights, and every parity test says so first.
// Checks that need no golden: a batch of mixed lengths gives each text what it gets alone, and the
// pooled vector is the pooling of the returned token vectors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "embedding_fixtures.h"
#include "padless/base/read_file.h"
#include "padless/serve/inference_engine.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

using models::SentencePooling;
using nlohmann::json;

const std::string kDataDir = std::string(PADLESS_SOURCE_DIR) + "/tests/serve/data";
const char kRegenerate[] =
    "python3 tests/serve/make_embedding_goldens.py --make-models "
    "BUILD/tests/serve/padless_write_embedding_model_dirs";

constexpr double kMinCosine = 0.99999;  // issue 44's fp32 target
// Largest elementwise difference, relative to max(1, the golden's largest magnitude): fp32
// against fp32, so only summation order separates the two (measured on this machine's CPU: at
// most 8.5e-7, and 1 - cosine at most 4e-13; a single value off by 0.01 fails here while the
// cosine still passes).
constexpr double kMaxDifference = 1e-5;
constexpr double kRerankTolerance = 1e-4;  // issue 44's target; measured: at most 4.3e-7
// Between two runs of padless itself (batch independence, pooling of its own token vectors;
// measured: at most 2.2e-6).
constexpr double kSelfTolerance = 1e-5;

json ReadGolden(const std::string& name) {
  const std::string path = kDataDir + "/" + name;
  absl::StatusOr<std::string> text = base::ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return json::object();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << path << " is not a JSON object";
  return j.is_object() ? j : json::object();
}

const json& EmbeddingGoldens() {
  static const json goldens = ReadGolden("embedding_goldens.json");
  return goldens;
}
const json& RerankGoldens() {
  static const json goldens = ReadGolden("rerank_goldens.json");
  return goldens;
}

// The fixture's directories, written once per test binary.
const std::string& ModelRoot() {
  static const std::string root = [] {
    const std::string dir = testing::ScratchDir("embedding_models");
    const absl::Status s = testing::WriteEmbeddingModelDirs(dir);
    EXPECT_TRUE(s.ok()) << s;
    return dir;
  }();
  return root;
}
std::string ModelDir(const std::string& name) { return ModelRoot() + "/" + name; }

// Whether `model` was written with the weights the goldens were computed from.
::testing::AssertionResult SameWeightsAsGoldens(const json& goldens, const std::string& model) {
  if (!goldens.contains("weights") || !goldens["weights"].contains(model)) {
    return ::testing::AssertionFailure() << "the goldens record no weights checksum of " << model;
  }
  absl::StatusOr<std::string> checksum = testing::WeightsChecksum(ModelDir(model));
  if (!checksum.ok()) return ::testing::AssertionFailure() << checksum.status();
  const std::string want = goldens["weights"][model].get<std::string>();
  if (*checksum != want) {
    return ::testing::AssertionFailure()
           << "weights drift, not a parity failure: embedding_fixtures.cc wrote " << model
           << " with weights " << *checksum << ", the goldens were made from " << want
           << "; regenerate them: " << kRegenerate;
  }
  return ::testing::AssertionSuccess();
}

EngineOptions CpuOptions(std::optional<SentencePooling> pooling = {}) {
  EngineOptions options;  // the CPU, fp32
  options.tokenizer_threads = 1;
  options.pooling = pooling;
  return options;
}

std::unique_ptr<InferenceEngine> LoadEngine(const std::string& dir,
                                            const EngineOptions& options = CpuOptions()) {
  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine = InferenceEngine::Load(dir, options);
  EXPECT_TRUE(engine.ok()) << dir << ": " << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

// Every result, or none (with a failure) when the submission or any request failed.
std::vector<EngineResult> RunAll(InferenceEngine& engine,
                                 const std::vector<EngineRequest>& requests) {
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> results = engine.Run(requests);
  EXPECT_TRUE(results.ok()) << results.status();
  if (!results.ok()) return {};
  EXPECT_EQ(results->size(), requests.size());
  std::vector<EngineResult> out;
  for (absl::StatusOr<EngineResult>& r : *results) {
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    out.push_back(*std::move(r));
  }
  return out;
}

std::vector<EngineRequest> TextRequests(const std::vector<std::string>& texts,
                                        const std::string& prompt = "",
                                        bool token_embeddings = false) {
  std::vector<EngineRequest> requests(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    requests[i].text = prompt + texts[i];
    requests[i].token_embeddings = token_embeddings;
  }
  return requests;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}
double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  return Dot(a, b) / std::max(std::sqrt(Dot(a, a) * Dot(b, b)), 1e-30);
}
double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double{a[i]} - b[i]));
  return worst;
}
double MaxMagnitude(const std::vector<float>& a) {
  double worst = 0;
  for (float v : a) worst = std::max(worst, std::fabs(double{v}));
  return worst;
}

void ExpectSameVector(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (float v : got) ASSERT_TRUE(std::isfinite(v)) << what;
  EXPECT_GE(Cosine(got, want), kMinCosine) << what;
  EXPECT_LE(MaxDifference(got, want), kMaxDifference * std::max(1.0, MaxMagnitude(want))) << what;
}

// Different texts get clearly different vectors: an engine that returned one vector for all (or
// left them zero) fails here even where a golden would happen to be close.
void ExpectDistinct(const std::vector<std::vector<float>>& vectors, const std::string& what) {
  for (size_t i = 0; i < vectors.size(); ++i) {
    for (size_t j = i + 1; j < vectors.size(); ++j) {
      EXPECT_GT(MaxDifference(vectors[i], vectors[j]), 1e-3)
          << what << ": texts " << i << ", " << j;
    }
  }
}

struct GoldenCase {
  std::string name, model, prompt_name, prompt;
  bool normalize = false;
  int64_t dimensions = 0;
  std::vector<int64_t> tokens;
  std::vector<std::vector<float>> vectors;
};

std::optional<GoldenCase> FindCase(const std::string& name) {
  for (const json& c : EmbeddingGoldens().value("cases", json::array())) {
    if (c.value("name", "") != name) continue;
    GoldenCase out;
    out.name = name;
    out.model = c.at("model").get<std::string>();
    out.prompt_name = c.at("prompt_name").is_null() ? "" : c.at("prompt_name").get<std::string>();
    out.prompt = c.at("prompt").get<std::string>();
    out.normalize = c.at("normalize").get<bool>();
    out.dimensions = c.at("dimensions").get<int64_t>();
    out.tokens = c.at("tokens").get<std::vector<int64_t>>();
    out.vectors = c.at("vectors").get<std::vector<std::vector<float>>>();
    return out;
  }
  return std::nullopt;
}

std::vector<std::string> GoldenTexts() {
  return EmbeddingGoldens().value("texts", std::vector<std::string>{});
}

TEST(EmbeddingGoldenTest, FixtureWritesTheGoldensWeights) {
  const json& goldens = EmbeddingGoldens();
  ASSERT_TRUE(goldens.contains("weights"));
  EXPECT_EQ(goldens["weights"].size(), testing::EmbeddingModelSpecs().size());
  for (const testing::EmbeddingModelSpec& spec : testing::EmbeddingModelSpecs()) {
    EXPECT_TRUE(SameWeightsAsGoldens(goldens, spec.name));
  }
  EXPECT_TRUE(SameWeightsAsGoldens(RerankGoldens(), testing::kCrossEncoderName));
  EXPECT_EQ(goldens.value("max_seq_length", 0), testing::kMaxSeqLength);
  EXPECT_EQ(GoldenTexts().size(), 8u);
}

TEST(EmbeddingGoldenTest, EngineDescribesEachDirectory) {
  for (const testing::EmbeddingModelSpec& spec : testing::EmbeddingModelSpecs()) {
    SCOPED_TRACE(spec.name);
    std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(spec.name));
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(engine->kind(), ModelKind::kEmbedding);
    const EmbeddingInfo* info = engine->embedding_info();
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->pooling, spec.pooling);
    EXPECT_EQ(info->hidden_size, testing::kEmbeddingHidden);
    EXPECT_EQ(info->dimension,
              spec.dense_and_normalize ? testing::kDenseOutFeatures : testing::kEmbeddingHidden);
    EXPECT_EQ(info->normalize, spec.dense_and_normalize);
    EXPECT_EQ(info->prompts,
              (std::map<std::string, std::string>{
                  {testing::kQueryPromptName, testing::kQueryPrompt}, {"passage", "passage: "}}));
    EXPECT_EQ(info->default_prompt_name, "");
    EXPECT_EQ(engine->options().max_len, testing::kMaxSeqLength);  // sentence_bert_config.json
  }
}

// One golden case: the texts (after the case's prompt) through the engine, each vector finished as
// sentence-transformers finished it (`dimensions`, then normalization), against its vectors.
class EmbeddingParityTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EmbeddingParityTest, MatchesSentenceTransformers) {
  const std::optional<GoldenCase> c = FindCase(GetParam());
  ASSERT_TRUE(c.has_value()) << "embedding_goldens.json has no case " << GetParam();
  ASSERT_TRUE(SameWeightsAsGoldens(EmbeddingGoldens(), c->model));
  std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(c->model));
  ASSERT_NE(engine, nullptr);
  const EmbeddingInfo* info = engine->embedding_info();
  ASSERT_NE(info, nullptr);
  std::string prompt;
  if (!c->prompt_name.empty()) {
    ASSERT_EQ(info->prompts.count(c->prompt_name), 1u) << c->prompt_name;
    prompt = info->prompts.at(c->prompt_name);
    EXPECT_EQ(prompt, c->prompt);
  }
  const std::vector<std::string> texts = GoldenTexts();
  ASSERT_EQ(c->vectors.size(), texts.size());
  ASSERT_EQ(c->tokens.size(), texts.size());
  const std::vector<EngineResult> results = RunAll(*engine, TextRequests(texts, prompt));
  ASSERT_EQ(results.size(), texts.size());
  std::vector<std::vector<float>> finished;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string what = absl::StrCat(c->name, ", text ", i, " '", texts[i], "'");
    EXPECT_EQ(results[i].tokens, c->tokens[i]) << what;
    ASSERT_EQ(static_cast<int64_t>(results[i].embedding.size()), info->dimension) << what;
    EXPECT_TRUE(results[i].token_embeddings.empty()) << what << ": not asked for";
    std::vector<float> v = results[i].embedding;
    ASSERT_TRUE(FinishEmbedding(v, c->normalize, c->dimensions).ok()) << what;
    ExpectSameVector(v, c->vectors[i], what);
    finished.push_back(std::move(v));
  }
  ExpectDistinct(finished, c->name);
}

INSTANTIATE_TEST_SUITE_P(Cases, EmbeddingParityTest,
                         ::testing::Values("cls", "mean", "max", "weightedmean", "lasttoken",
                                           "mean_sqrt_len", "mean_normalized", "mean_dimensions_16",
                                           "mean_prompt_query", "dense_normalize",
                                           "dense_without_normalize", "dense_dimensions_8"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// TEI's --pooling: EngineOptions::pooling replaces 1_Pooling's mode.
TEST(EmbeddingOptionsTest, PoolingOptionReplacesTheDirectorysPooling) {
  const std::optional<GoldenCase> cls = FindCase("cls");
  ASSERT_TRUE(cls.has_value());
  ASSERT_TRUE(SameWeightsAsGoldens(EmbeddingGoldens(), "st_mean"));
  std::unique_ptr<InferenceEngine> engine =
      LoadEngine(ModelDir("st_mean"), CpuOptions(SentencePooling::kCls));
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(engine->embedding_info(), nullptr);
  EXPECT_EQ(engine->embedding_info()->pooling, SentencePooling::kCls);
  const std::vector<EngineResult> results = RunAll(*engine, TextRequests(GoldenTexts()));
  ASSERT_EQ(results.size(), cls->vectors.size());
  for (size_t i = 0; i < results.size(); ++i) {
    ExpectSameVector(results[i].embedding, cls->vectors[i], absl::StrCat("text ", i));
  }
}

// /embed_all: every token's last-layer vector, special tokens included, as sentence-transformers'
// output_value="token_embeddings".
TEST(EmbeddingTokensTest, TokenEmbeddingsMatchSentenceTransformers) {
  const json& golden = EmbeddingGoldens().value("token_embeddings", json::object());
  ASSERT_TRUE(golden.contains("vectors"));
  const std::string model = golden.at("model").get<std::string>();
  const int64_t hidden = golden.at("hidden_size").get<int64_t>();
  ASSERT_EQ(hidden, testing::kEmbeddingHidden);
  ASSERT_TRUE(SameWeightsAsGoldens(EmbeddingGoldens(), model));
  const auto want = golden.at("vectors").get<std::vector<std::vector<float>>>();
  std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(model));
  ASSERT_NE(engine, nullptr);
  const std::vector<std::string> texts = GoldenTexts();
  const std::vector<EngineResult> results =
      RunAll(*engine, TextRequests(texts, "", /*token_embeddings=*/true));
  ASSERT_EQ(results.size(), want.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const std::vector<float>& got = results[i].token_embeddings;
    ASSERT_EQ(static_cast<int64_t>(want[i].size()), results[i].tokens * hidden) << i;
    ASSERT_EQ(got.size(), want[i].size()) << "text " << i;
    for (int64_t t = 0; t < results[i].tokens; ++t) {
      const auto row = [&](const std::vector<float>& all) {
        return std::vector<float>(all.begin() + t * hidden, all.begin() + (t + 1) * hidden);
      };
      ExpectSameVector(row(got), row(want[i]), absl::StrCat("text ", i, ", token ", t));
    }
  }
}

// Embedding models keep a long text's first max_seq_length tokens, as sentence-transformers cuts
// (the parity cases hold the long text); another cut gives another vector, and truncate = false
// refuses the text.
TEST(EmbeddingTruncationTest, LongTextKeepsItsFirstTokens) {
  const json& goldens = EmbeddingGoldens();
  const std::vector<std::string> texts = GoldenTexts();
  const size_t long_index = goldens.value("long_text_index", size_t{0});
  ASSERT_LT(long_index, texts.size());
  const std::optional<GoldenCase> mean = FindCase("mean");
  ASSERT_TRUE(mean.has_value());
  ASSERT_EQ(mean->tokens.at(long_index), testing::kMaxSeqLength) << "the text is not cut";
  ASSERT_TRUE(SameWeightsAsGoldens(goldens, "st_mean"));
  std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir("st_mean"));
  ASSERT_NE(engine, nullptr);
  std::vector<EngineRequest> requests(3);
  for (EngineRequest& r : requests) r.text = texts[long_index];
  requests[1].truncation = tokenize::Truncation::kHead;
  requests[2].truncation = tokenize::Truncation::kTail;
  const std::vector<EngineResult> results = RunAll(*engine, requests);
  ASSERT_EQ(results.size(), 3u);
  for (const EngineResult& r : results) EXPECT_EQ(r.tokens, testing::kMaxSeqLength);
  ExpectSameVector(results[0].embedding, mean->vectors[long_index], "default cut");
  ExpectSameVector(results[1].embedding, mean->vectors[long_index], "head cut");
  EXPECT_GT(MaxDifference(results[2].embedding, mean->vectors[long_index]), 1e-3)
      << "keeping the last tokens gave the vector of the first ones";

  EngineRequest strict;
  strict.text = texts[long_index];
  strict.truncate = false;
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> refused = engine->Run({strict});
  ASSERT_TRUE(refused.ok()) << refused.status();
  ASSERT_EQ(refused->size(), 1u);
  EXPECT_EQ((*refused)[0].status().code(), absl::StatusCode::kInvalidArgument)
      << (*refused)[0].status();
}

TEST(RerankParityTest, ScoresAndOrderMatchCrossEncoder) {
  const json& goldens = RerankGoldens();
  ASSERT_TRUE(goldens.contains("texts"));
  ASSERT_TRUE(SameWeightsAsGoldens(goldens, testing::kCrossEncoderName));
  const std::string query = goldens.at("query").get<std::string>();
  const auto texts = goldens.at("texts").get<std::vector<std::string>>();
  const auto probabilities = goldens.at("probabilities").get<std::vector<double>>();
  const auto logits = goldens.at("logits").get<std::vector<double>>();
  const auto order = goldens.at("order").get<std::vector<size_t>>();
  ASSERT_EQ(probabilities.size(), texts.size());
  ASSERT_EQ(logits.size(), texts.size());

  std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(testing::kCrossEncoderName));
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->kind(), ModelKind::kReranker);
  EXPECT_EQ(engine->embedding_info(), nullptr);
  std::vector<EngineRequest> requests(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    requests[i].text = query;
    requests[i].pair = texts[i];
  }
  const std::vector<EngineResult> results = RunAll(*engine, requests);
  ASSERT_EQ(results.size(), texts.size());
  std::vector<float> scores;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(results[i].probabilities.size(), 1u) << i;
    ASSERT_EQ(results[i].scores.size(), 1u) << i;
    EXPECT_NEAR(results[i].probabilities[0], probabilities[i], kRerankTolerance) << texts[i];
    EXPECT_NEAR(results[i].scores[0], logits[i], kRerankTolerance) << texts[i];
    EXPECT_NEAR(results[i].probabilities[0], 1 / (1 + std::exp(-double{results[i].scores[0]})),
                1e-6)
        << texts[i];
    EXPECT_TRUE(results[i].embedding.empty());
    scores.push_back(results[i].scores[0]);
  }
  std::vector<size_t> ranked(texts.size());
  std::iota(ranked.begin(), ranked.end(), size_t{0});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  EXPECT_EQ(ranked, order);
  EXPECT_GT(*std::max_element(scores.begin(), scores.end()) -
                *std::min_element(scores.begin(), scores.end()),
            0.1);
}

// all-MiniLM-L6-v2 itself: PADLESS_MINILM_DIR, else the directory scripts/fetch_minilm.sh fills.
TEST(MiniLmParityTest, EmbeddingsMatchSentenceTransformers) {
  const char* env = std::getenv("PADLESS_MINILM_DIR");
  const std::string dir = env != nullptr ? env : "/tmp/padless_minilm";
  struct stat st {};
  if (::stat((dir + "/model.safetensors").c_str(), &st) != 0) {
    GTEST_SKIP() << dir << " has no model.safetensors (run scripts/fetch_minilm.sh)";
  }
  const json goldens = ReadGolden("minilm_goldens.json");
  ASSERT_TRUE(goldens.contains("vectors"));
  ASSERT_EQ(static_cast<int64_t>(st.st_size), goldens.at("model_safetensors_bytes").get<int64_t>())
      << dir << " holds other weights than the goldens were made from";
  const auto texts = goldens.at("texts").get<std::vector<std::string>>();
  const auto want = goldens.at("vectors").get<std::vector<std::vector<float>>>();
  const bool normalize = goldens.at("normalize").get<bool>();
  std::unique_ptr<InferenceEngine> engine = LoadEngine(dir);
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->kind(), ModelKind::kEmbedding);
  ASSERT_NE(engine->embedding_info(), nullptr);
  EXPECT_EQ(engine->embedding_info()->pooling, SentencePooling::kMean);
  EXPECT_EQ(engine->embedding_info()->normalize, normalize);
  const std::vector<EngineResult> results = RunAll(*engine, TextRequests(texts));
  ASSERT_EQ(results.size(), want.size());
  std::vector<std::vector<float>> finished;
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<float> v = results[i].embedding;
    ASSERT_EQ(v.size(), 384u);
    ASSERT_TRUE(FinishEmbedding(v, normalize, 0).ok());
    ExpectSameVector(v, want[i], absl::StrCat("text ", i, " '", texts[i], "'"));
    finished.push_back(std::move(v));
  }
  ExpectDistinct(finished, "MiniLM");
}

// Texts of mixed lengths for the checks without goldens, the last one cut at max_seq_length.
const std::vector<std::string>& MixedTexts() {
  static const std::vector<std::string> texts = {
      "a",
      "hello world",
      "the film was long and slow, but the music was great",
      "?",
      "what is the capital of france? paris is the capital and largest city of france, and "
      "berlin is the capital of germany; we love them both and we watch films there",
      "caf\u00e9 \u4e2d\u6587",
  };
  return texts;
}

// Pooling as sentence-transformers defines its modes, over one text's [tokens, hidden] rows.
std::vector<float> PoolRows(const std::vector<float>& rows, int64_t tokens, int64_t hidden,
                            SentencePooling mode) {
  const auto row = [&](int64_t t) {
    return std::vector<float>(rows.begin() + t * hidden, rows.begin() + (t + 1) * hidden);
  };
  if (mode == SentencePooling::kCls) return row(0);
  if (mode == SentencePooling::kLastToken) return row(tokens - 1);
  std::vector<double> sum(hidden, mode == SentencePooling::kMax ? -INFINITY : 0.0);
  double weights = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const double weight = mode == SentencePooling::kWeightedMean ? t + 1 : 1;
    weights += weight;
    for (int64_t h = 0; h < hidden; ++h) {
      const double value = rows[t * hidden + h];
      sum[h] = mode == SentencePooling::kMax ? std::max(sum[h], value) : sum[h] + weight * value;
    }
  }
  double divisor = 1;
  if (mode == SentencePooling::kMean || mode == SentencePooling::kWeightedMean) divisor = weights;
  if (mode == SentencePooling::kMeanSqrtLen) divisor = std::sqrt(static_cast<double>(tokens));
  std::vector<float> out(hidden);
  for (int64_t h = 0; h < hidden; ++h) out[h] = static_cast<float>(sum[h] / divisor);
  return out;
}

// Without goldens: the pooled vector (on the device, over the varlen batch) is the pooling of the
// token vectors the engine returns for the same request.
TEST(EmbeddingConsistencyTest, PooledVectorIsThePoolingOfTheTokenVectors) {
  for (const testing::EmbeddingModelSpec& spec : testing::EmbeddingModelSpecs()) {
    if (spec.dense_and_normalize) continue;  // the Dense module follows the pooling
    SCOPED_TRACE(spec.name);
    std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(spec.name));
    ASSERT_NE(engine, nullptr);
    const int64_t hidden = testing::kEmbeddingHidden;
    const std::vector<EngineResult> results =
        RunAll(*engine, TextRequests(MixedTexts(), "", /*token_embeddings=*/true));
    ASSERT_EQ(results.size(), MixedTexts().size());
    std::vector<std::vector<float>> pooled;
    for (size_t i = 0; i < results.size(); ++i) {
      const EngineResult& r = results[i];
      ASSERT_GT(r.tokens, 2) << i;  // [CLS] ... [SEP]
      ASSERT_LE(r.tokens, testing::kMaxSeqLength) << i;
      ASSERT_EQ(static_cast<int64_t>(r.token_embeddings.size()), r.tokens * hidden) << i;
      ASSERT_EQ(static_cast<int64_t>(r.embedding.size()), hidden) << i;
      const std::vector<float> want = PoolRows(r.token_embeddings, r.tokens, hidden, spec.pooling);
      EXPECT_LE(MaxDifference(r.embedding, want),
                kSelfTolerance * std::max(1.0, MaxMagnitude(want)))
          << "text " << i;
      pooled.push_back(r.embedding);
    }
    ExpectDistinct(pooled, spec.name);
  }
}

// Without goldens: a batch of texts of mixed lengths gives each text what it gets alone (varlen:
// no padding, no attention across texts), vectors and token vectors alike.
TEST(EmbeddingConsistencyTest, BatchOfMixedLengthsEqualsEachTextAlone) {
  // The batcher sends a batch at once only to an idle device: with a delay, the texts that arrive
  // while the first one runs wait for it and go out together.
  EngineOptions options = CpuOptions();
  options.max_batch_delay = std::chrono::seconds(1);
  const std::vector<EngineRequest> requests =
      TextRequests(MixedTexts(), "", /*token_embeddings=*/true);
  for (const char* model : {"st_mean", "st_lasttoken", "st_mean_dense_normalize"}) {
    SCOPED_TRACE(model);
    std::unique_ptr<InferenceEngine> engine = LoadEngine(ModelDir(model), options);
    ASSERT_NE(engine, nullptr);
    std::mutex mu;
    int64_t widest_batch = 0;
    engine->SetBatchObserver([&](const BatchStats& stats) {
      std::lock_guard<std::mutex> lock(mu);
      widest_batch = std::max(widest_batch, stats.sequences);
    });
    // A loaded machine may still hand the device one text at a time: try again a few times.
    std::vector<EngineResult> together;
    for (int attempt = 0; attempt < 5; ++attempt) {
      together = RunAll(*engine, requests);
      ASSERT_EQ(together.size(), requests.size());
      std::lock_guard<std::mutex> lock(mu);
      if (widest_batch > 1) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_GT(widest_batch, 1) << "the texts never shared a batch: nothing was compared";
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::vector<EngineResult> alone = RunAll(*engine, {requests[i]});
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(alone[0].tokens, together[i].tokens) << i;
      ASSERT_EQ(alone[0].embedding.size(), together[i].embedding.size()) << i;
      ASSERT_EQ(alone[0].token_embeddings.size(), together[i].token_embeddings.size()) << i;
      EXPECT_LE(MaxDifference(alone[0].embedding, together[i].embedding), kSelfTolerance) << i;
      EXPECT_LE(MaxDifference(alone[0].token_embeddings, together[i].token_embeddings),
                kSelfTolerance)
          << i;
    }
  }
}

// TEI's `dimensions` and `normalize` as the parity cases use them: the first values, then the
// unit norm; a zero vector stays zero; a width above the vector's is refused.
TEST(EmbeddingConsistencyTest, FinishEmbeddingTruncatesThenNormalizes) {
  const auto expect_near = [](const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LE(MaxDifference(got, want), 1e-7);
  };
  std::vector<float> v = {3, 4, 12, 0};
  ASSERT_TRUE(FinishEmbedding(v, /*normalize=*/false, 2).ok());
  EXPECT_EQ(v, (std::vector<float>{3, 4}));
  v = {3, 4, 12, 0};
  ASSERT_TRUE(FinishEmbedding(v, /*normalize=*/true, 2).ok());
  expect_near(v, {0.6f, 0.8f});
  v = {3, 4, 12, 0};
  ASSERT_TRUE(FinishEmbedding(v, /*normalize=*/true, 0).ok());
  expect_near(v, {3.0f / 13, 4.0f / 13, 12.0f / 13, 0});
  v = {0, 0, 0};
  ASSERT_TRUE(FinishEmbedding(v, /*normalize=*/true, 0).ok());
  EXPECT_EQ(v, (std::vector<float>{0, 0, 0}));
  v = {1, 2, 3};
  EXPECT_EQ(FinishEmbedding(v, /*normalize=*/true, 4).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace padless::serve
