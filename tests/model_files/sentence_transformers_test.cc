// The sentence-transformers directory reader (issue 44): all-MiniLM-L6-v2's real layout (mean
// pooling, Normalize), a Dense stack, prompts, TEI's --pooling names, and a clear status (never an
// abort) for each kind of broken directory.
#include "padless/model_files/sentence_transformers.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"

namespace padless::model_files {
namespace {

// all-MiniLM-L6-v2's files, as the Hub has them.
constexpr char kMiniLmModules[] = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";
constexpr char kMiniLmPooling[] = R"({
  "word_embedding_dimension": 384,
  "pooling_mode_cls_token": false,
  "pooling_mode_mean_tokens": true,
  "pooling_mode_max_tokens": false,
  "pooling_mode_mean_sqrt_len_tokens": false
})";
constexpr char kMiniLmSentenceBert[] = R"({"max_seq_length": 256, "do_lower_case": false})";
constexpr char kMiniLmSettings[] = R"({
  "__version__": {"sentence_transformers": "2.0.0", "transformers": "4.6.1", "pytorch": "1.8.1"}
})";

std::string PoolingConfig(const std::string& mode_field) {
  std::string j = R"({"word_embedding_dimension": 8, "pooling_mode_mean_tokens": false)";
  if (!mode_field.empty()) j += ", \"" + mode_field + "\": true";
  return j + ", \"include_prompt\": false}";
}

void RemoveTree(const std::string& path) {
  if (base::IsDirectory(path)) {
    for (const std::string& name : base::ListDirectory(path)) {
      RemoveTree(base::JoinPath(path, name));
    }
    ::rmdir(path.c_str());
  } else {
    base::RemoveFile(path);
  }
}

class SentenceTransformersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/padless_st_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { RemoveTree(dir_); }

  void Write(const std::string& name, const std::string& content) {
    const std::string path = base::JoinPath(dir_, name);
    ASSERT_TRUE(base::MakeDirectories(base::ParentDirectory(path)).ok());
    ASSERT_TRUE(base::WriteFileAtomically(path, content).ok()) << path;
  }

  void WriteMiniLm() {
    Write("modules.json", kMiniLmModules);
    Write("1_Pooling/config.json", kMiniLmPooling);
    Write("sentence_bert_config.json", kMiniLmSentenceBert);
    Write("config_sentence_transformers.json", kMiniLmSettings);
    Write("config.json", R"({"model_type": "bert", "hidden_size": 384})");
  }

  // A pipeline of Transformer, Pooling (of width 8), the Dense layers named, then Normalize.
  void WriteWithDense(const std::vector<std::string>& dense_configs, bool normalize = true) {
    std::string modules =
        R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling",
             "type": "sentence_transformers.models.Pooling"})";
    for (size_t i = 0; i < dense_configs.size(); ++i) {
      const std::string path = std::to_string(i + 2) + "_Dense";
      modules += R"(, {"idx": )" + std::to_string(i + 2) + R"(, "name": ")" + path +
                 R"(", "path": ")" + path + R"(", "type": "sentence_transformers.models.Dense"})";
      Write(path + "/config.json", dense_configs[i]);
      Write(path + "/model.safetensors", "weights are not read");
    }
    if (normalize) {
      modules += R"(, {"idx": 9, "name": "n", "path": "9_Normalize",
                       "type": "sentence_transformers.models.Normalize"})";
    }
    Write("modules.json", modules + "]");
    Write("1_Pooling/config.json", PoolingConfig("pooling_mode_cls_token"));
  }

  // The reader's status, which must be `code` with a message containing every one of `parts`.
  void ExpectError(absl::StatusCode code, const std::vector<std::string>& parts) {
    absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), code) << spec.status();
    for (const std::string& part : parts) {
      EXPECT_TRUE(absl::StrContains(spec.status().message(), part))
          << spec.status() << " lacks '" << part << "'";
    }
  }

  std::string dir_;
};

TEST_F(SentenceTransformersTest, ReadsAllMiniLmL6V2) {
  WriteMiniLm();
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->transformer_dir, dir_);
  EXPECT_EQ(spec->max_seq_length, 256);
  EXPECT_EQ(spec->pooling, PoolingMode::kMean);
  EXPECT_EQ(spec->word_embedding_dimension, 384);
  EXPECT_TRUE(spec->include_prompt);
  EXPECT_TRUE(spec->dense.empty());
  EXPECT_TRUE(spec->normalize);
  EXPECT_TRUE(spec->prompts.empty());
  EXPECT_EQ(spec->default_prompt_name, "");
  EXPECT_EQ(spec->similarity, SimilarityFunction::kCosine);
  EXPECT_EQ(spec->embedding_dimension(), 384);
}

// sentence-transformers 6 saves module classes under new packages, one `pooling_mode` field and
// `embedding_dimension`, and no max_seq_length: its tokenizer's model_max_length holds it.
TEST_F(SentenceTransformersTest, ReadsTheSentenceTransformers6Layout) {
  Write("modules.json", R"([
    {"idx": 0, "name": "0", "path": "",
     "type": "sentence_transformers.base.modules.transformer.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling",
     "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize",
     "type": "sentence_transformers.base.modules.normalize.Normalize"}])");
  Write("1_Pooling/config.json",
        R"({"embedding_dimension": 384, "pooling_mode": "lasttoken", "include_prompt": true})");
  Write("sentence_bert_config.json", R"({"do_lower_case": false})");
  Write("tokenizer_config.json", R"({"model_max_length": 384})");
  Write("config.json", R"({"model_type": "bert", "hidden_size": 384})");
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->pooling, PoolingMode::kLastToken);
  EXPECT_EQ(spec->word_embedding_dimension, 384);
  EXPECT_EQ(spec->max_seq_length, 384);
  EXPECT_TRUE(spec->normalize);
  for (const char* mode : {R"("mean_sqrt_len_tokens")", R"(["weightedmean"])"}) {
    Write("1_Pooling/config.json",
          std::string(R"({"embedding_dimension": 384, "pooling_mode": )") + mode + "}");
    spec = ReadSentenceTransformerDir(dir_);
    ASSERT_TRUE(spec.ok()) << spec.status();
  }
  EXPECT_EQ(spec->pooling, PoolingMode::kWeightedMean);
  Write("1_Pooling/config.json", R"({"embedding_dimension": 384, "pooling_mode": ["cls", "max"]})");
  ExpectError(absl::StatusCode::kUnimplemented, {"several pooling modes"});
  Write("1_Pooling/config.json", R"({"embedding_dimension": 384, "pooling_mode": "median"})");
  ExpectError(absl::StatusCode::kInvalidArgument, {"pooling_mode", "median"});
  // A huge tokenizer limit is Hugging Face's "none": no limit is taken from it.
  Write("1_Pooling/config.json", R"({"embedding_dimension": 384, "pooling_mode": "cls"})");
  Write("tokenizer_config.json", R"({"model_max_length": 1000000000000000019884624838656})");
  spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->max_seq_length, 0);
  // A class of another package is not sentence-transformers' module.
  Write("modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "mypkg.Transformer"}])");
  ExpectError(absl::StatusCode::kUnimplemented, {"mypkg.Transformer"});
}

TEST_F(SentenceTransformersTest, WithoutModulesJsonIsNotFound) {
  Write("config.json", R"({"model_type": "bert"})");
  ExpectError(absl::StatusCode::kNotFound, {"modules.json"});
}

TEST_F(SentenceTransformersTest, ReadsEachPoolingMode) {
  const std::vector<std::pair<std::string, PoolingMode>> modes = {
      {"pooling_mode_cls_token", PoolingMode::kCls},
      {"pooling_mode_max_tokens", PoolingMode::kMax},
      {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::kMeanSqrtLen},
      {"pooling_mode_weightedmean_tokens", PoolingMode::kWeightedMean},
      {"pooling_mode_lasttoken", PoolingMode::kLastToken}};
  for (const auto& [field, mode] : modes) {
    WriteWithDense({}, /*normalize=*/false);
    Write("1_Pooling/config.json", PoolingConfig(field));
    absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
    ASSERT_TRUE(spec.ok()) << field << ": " << spec.status();
    EXPECT_EQ(spec->pooling, mode) << field;
    EXPECT_FALSE(spec->include_prompt);
    EXPECT_FALSE(spec->normalize);
    EXPECT_EQ(spec->max_seq_length, 0);  // no sentence_bert_config.json
  }
}

TEST_F(SentenceTransformersTest, ReadsADenseStack) {
  WriteWithDense({R"({"in_features": 8, "out_features": 16, "bias": true,
                      "activation_function": "torch.nn.modules.activation.Tanh"})",
                  R"({"in_features": 16, "out_features": 4, "bias": false,
                      "activation_function": "torch.nn.modules.linear.Identity"})"});
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->dense.size(), 2u);
  EXPECT_EQ(spec->dense[0].in_features, 8);
  EXPECT_EQ(spec->dense[0].out_features, 16);
  EXPECT_TRUE(spec->dense[0].bias);
  EXPECT_EQ(spec->dense[0].activation, DenseActivation::kTanh);
  EXPECT_EQ(spec->dense[0].weights_path, base::JoinPath(dir_, "2_Dense/model.safetensors"));
  EXPECT_FALSE(spec->dense[1].bias);
  EXPECT_EQ(spec->dense[1].activation, DenseActivation::kIdentity);
  EXPECT_TRUE(spec->normalize);
  EXPECT_EQ(spec->embedding_dimension(), 4);
}

TEST_F(SentenceTransformersTest, DenseFallsBackToPickledWeightsAndDefaultTanh) {
  WriteWithDense({R"({"in_features": 8, "out_features": 3})"});
  base::RemoveFile(base::JoinPath(dir_, "2_Dense/model.safetensors"));
  Write("2_Dense/pytorch_model.bin", "pickle");
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->dense[0].weights_path, base::JoinPath(dir_, "2_Dense/pytorch_model.bin"));
  EXPECT_EQ(spec->dense[0].activation, DenseActivation::kTanh);
  EXPECT_TRUE(spec->dense[0].bias);
}

TEST_F(SentenceTransformersTest, ReadsPromptsAndSimilarity) {
  WriteMiniLm();
  Write("config_sentence_transformers.json", R"({
    "model_type": "SentenceTransformer",
    "prompts": {"query": "query: ", "passage": "passage: "},
    "default_prompt_name": "query",
    "similarity_fn_name": "dot"
  })");
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->prompts.size(), 2u);
  EXPECT_EQ(spec->prompts.at("query"), "query: ");
  EXPECT_EQ(spec->prompts.at("passage"), "passage: ");
  EXPECT_EQ(spec->default_prompt_name, "query");
  EXPECT_EQ(spec->similarity, SimilarityFunction::kDot);
  EXPECT_EQ(SimilarityFunctionName(spec->similarity), "dot");
}

TEST_F(SentenceTransformersTest, NullSettingsAreDefaults) {
  WriteMiniLm();
  Write("config_sentence_transformers.json",
        R"({"prompts": {}, "default_prompt_name": null, "similarity_fn_name": null})");
  absl::StatusOr<SentenceTransformerSpec> spec = ReadSentenceTransformerDir(dir_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->default_prompt_name, "");
  EXPECT_EQ(spec->similarity, SimilarityFunction::kCosine);
}

TEST(ParsePoolingModeTest, AcceptsTeiNames) {
  const std::vector<std::pair<std::string, PoolingMode>> names = {
      {"cls", PoolingMode::kCls},
      {"mean", PoolingMode::kMean},
      {"max", PoolingMode::kMax},
      {"mean_sqrt_len", PoolingMode::kMeanSqrtLen},
      {"weightedmean", PoolingMode::kWeightedMean},
      {"weighted-mean", PoolingMode::kWeightedMean},
      {"last-token", PoolingMode::kLastToken},
      {"lasttoken", PoolingMode::kLastToken}};
  for (const auto& [name, mode] : names) {
    absl::StatusOr<PoolingMode> parsed = ParsePoolingMode(name);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    EXPECT_EQ(*parsed, mode) << name;
    EXPECT_EQ(*ParsePoolingMode(PoolingModeName(mode)), mode);
  }
  EXPECT_EQ(ParsePoolingMode("splade").status().code(), absl::StatusCode::kUnimplemented);
  absl::StatusOr<PoolingMode> bad = ParsePoolingMode("median");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "median")) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "last-token")) << bad.status();
}

TEST_F(SentenceTransformersTest, RefusesMalformedModulesJson) {
  Write("1_Pooling/config.json", kMiniLmPooling);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[", "not valid JSON"},
      {R"({"modules": []})", "array"},
      {"[1]", "not an object"},
      {R"([{"name": "0", "path": ""}])", "'type' is missing"},
      {R"([{"name": "0", "path": 3, "type": "x"}])", "'path' must be a string"},
      {R"([{"idx": "0", "name": "0", "path": "", "type": "x"}])", "'idx' must be an integer"},
      {"[]", "no Transformer"}};
  for (const auto& [modules, part] : cases) {
    Write("modules.json", modules);
    ExpectError(absl::StatusCode::kInvalidArgument, {"modules.json", part});
  }
}

TEST_F(SentenceTransformersTest, RefusesPathsOutOfTheDirectory) {
  for (const char* path : {"../x", "1_Pooling/../../x", "/etc", "a\\..\\..\\b"}) {
    Write("modules.json",
          R"([{"name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
              {"name": "1", "path": ")" +
              absl::StrReplaceAll(path, {{"\\", "\\\\"}}) +
              R"(", "type": "sentence_transformers.models.Pooling"}])");
    ExpectError(absl::StatusCode::kInvalidArgument, {"modules.json", "'path'"});
  }
}

TEST_F(SentenceTransformersTest, RefusesUnsupportedModules) {
  Write("1_Pooling/config.json", kMiniLmPooling);
  const std::string transformer =
      R"({"name": "0", "path": "", "type": "sentence_transformers.models.Transformer"})";
  const std::string pooling =
      R"({"name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})";
  const std::string normalize =
      R"({"name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})";
  Write("modules.json", "[" + transformer + R"(, {"name": "1", "path": "1_CNN",
        "type": "sentence_transformers.models.CNN"}])");
  ExpectError(absl::StatusCode::kUnimplemented, {"sentence_transformers.models.CNN"});
  Write("modules.json", "[" + pooling + ", " + transformer + "]");
  ExpectError(absl::StatusCode::kUnimplemented, {"modules.json", "order"});
  Write("modules.json",
        "[" + transformer + ", " + pooling + ", " + normalize + ", " + normalize + "]");
  ExpectError(absl::StatusCode::kUnimplemented, {"modules.json", "order"});
  Write("modules.json", "[" + transformer + "]");
  ExpectError(absl::StatusCode::kInvalidArgument, {"modules.json", "no Pooling"});
}

TEST_F(SentenceTransformersTest, RefusesBadPoolingConfigs) {
  WriteMiniLm();
  const std::string origin = "1_Pooling/config.json";
  Write(origin, PoolingConfig(""));
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "no pooling mode"});
  Write(origin, R"({"word_embedding_dimension": 8, "pooling_mode_cls_token": true})");
  ExpectError(absl::StatusCode::kUnimplemented,
              {origin, "pooling_mode_cls_token", "pooling_mode_mean_tokens"});
  Write(origin, R"({"word_embedding_dimension": "8"})");
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "word_embedding_dimension"});
  Write(origin, R"({"pooling_mode_mean_tokens": true})");
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "word_embedding_dimension", "missing"});
  Write(origin, R"({"word_embedding_dimension": 8, "pooling_mode_max_tokens": 1})");
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "pooling_mode_max_tokens"});
  Write(origin, R"([8])");
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "object"});
  Write(origin, "{");
  ExpectError(absl::StatusCode::kInvalidArgument, {origin, "JSON"});
  base::RemoveFile(base::JoinPath(dir_, origin));
  ExpectError(absl::StatusCode::kFailedPrecondition, {origin, "does not exist"});
}

TEST_F(SentenceTransformersTest, RefusesBadDenseModules) {
  WriteWithDense({R"({"in_features": 7, "out_features": 4})"});
  ExpectError(absl::StatusCode::kInvalidArgument, {"2_Dense/config.json", "in_features"});
  WriteWithDense({R"({"in_features": 8, "out_features": -4})"});
  ExpectError(absl::StatusCode::kInvalidArgument, {"2_Dense/config.json", "out_features"});
  WriteWithDense({R"({"in_features": 8, "out_features": 4, "bias": "yes"})"});
  ExpectError(absl::StatusCode::kInvalidArgument, {"2_Dense/config.json", "bias"});
  WriteWithDense({R"({"in_features": 8, "out_features": 4,
                      "activation_function": "torch.nn.modules.activation.Softplus"})"});
  ExpectError(absl::StatusCode::kUnimplemented, {"2_Dense/config.json", "Softplus"});
  WriteWithDense({R"({"in_features": 8, "out_features": 4})"});
  base::RemoveFile(base::JoinPath(dir_, "2_Dense/model.safetensors"));
  ExpectError(absl::StatusCode::kFailedPrecondition, {"2_Dense", "weights"});
}

TEST_F(SentenceTransformersTest, RefusesBadSettings) {
  WriteMiniLm();
  const std::string origin = "config_sentence_transformers.json";
  const std::vector<std::pair<std::string, std::string>> invalid = {
      {R"({"prompts": ["query: "]})", "'prompts'"},
      {R"({"prompts": {"query": 1}})", "'query'"},
      {R"({"prompts": {"query": "q: "}, "default_prompt_name": "passage"})", "passage"},
      {R"({"default_prompt_name": 3})", "default_prompt_name"},
      {R"({"similarity_fn_name": "jaccard"})", "jaccard"},
      {"nope", "JSON"}};
  for (const auto& [settings, part] : invalid) {
    Write(origin, settings);
    ExpectError(absl::StatusCode::kInvalidArgument, {origin, part});
  }
  Write(origin, R"({"model_type": "SparseEncoder"})");
  ExpectError(absl::StatusCode::kUnimplemented, {origin, "SparseEncoder"});
}

}  // namespace
}  // namespace padless::model_files
