// EncoderConfig: presets, validation naming the field, and the JSON round trip a model directory
// uses.
#include "padless/models/encoder_config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace padless::models {
namespace {

TEST(EncoderConfigTest, BaseIsBertBase) {
  const EncoderConfig c = EncoderConfig::Base();
  EXPECT_EQ(c.layers(), 12);
  EXPECT_EQ(c.hidden(), 768);
  EXPECT_EQ(c.heads(), 12);
  EXPECT_EQ(c.ffn(), 3072);
  EXPECT_TRUE(c.Validate().ok());
  for (const char* name : {"tiny", "small", "base", "modernbert-base"}) {
    ASSERT_TRUE(EncoderConfig::Preset(name).ok()) << name;
    EXPECT_TRUE(EncoderConfig::Preset(name)->Validate().ok()) << name;
  }
  EXPECT_LT(EncoderConfig::Tiny().hidden(), EncoderConfig::Small().hidden());
  EXPECT_FALSE(EncoderConfig::Preset("huge").ok());
}

TEST(EncoderConfigTest, ValidateNamesTheField) {
  const absl::Status heads = EncoderConfig().hidden(100).heads(12).Validate();
  ASSERT_FALSE(heads.ok());
  EXPECT_NE(std::string(heads.message()).find("hidden"), std::string::npos);
  const absl::Status layers = EncoderConfig().layers(0).Validate();
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(std::string(layers.message()).find("layers"), std::string::npos);
  EXPECT_FALSE(EncoderConfig().dropout(1.0).Validate().ok());
}

TEST(EncoderConfigTest, JsonRoundTrip) {
  const EncoderConfig c = EncoderConfig::Small()
                              .vocab_size(1234)
                              .num_labels(5)
                              .pre_ln(true)
                              .activation(Activation::kGeluTanh)
                              .pooling(Pooling::kMean)
                              .dropout(0.25);
  absl::StatusOr<EncoderConfig> back = EncoderConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  EXPECT_EQ(back->vocab_size(), 1234);
  EXPECT_EQ(back->activation(), Activation::kGeluTanh);
  EXPECT_EQ(back->pooling(), Pooling::kMean);
}

TEST(EncoderConfigTest, BadJsonIsAClearError) {
  for (const char* bad : {"", "{", "[1,2]", R"({"hidden": "big"})", R"({"activation": "swish"})",
                          R"({"hidden": 10, "heads": 3})", R"({"pre_ln": 1})"}) {
    absl::StatusOr<EncoderConfig> c = EncoderConfig::FromJson(bad, "dir/config.json");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(std::string(c.status().message()).find("dir/config.json"), std::string::npos) << bad;
  }
}

TEST(EncoderConfigTest, PruningRecordGivesPerLayerSizes) {
  const EncoderConfig c = EncoderConfig::Tiny()
                              .heads(4)
                              .layers(3)
                              .pruned_heads({{1, 3}, {}, {0}})
                              .layer_ffn({512, 256, 16});
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.head_dim(), 32);
  EXPECT_EQ(c.heads_in_layer(0), 2);
  EXPECT_EQ(c.heads_in_layer(1), 4);
  EXPECT_EQ(c.heads_in_layer(2), 3);
  EXPECT_EQ(c.kept_heads(0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(c.kept_heads(2), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(c.ffn_in_layer(1), 256);
  EXPECT_TRUE(c.pruned());
  EXPECT_FALSE(EncoderConfig::Tiny().pruned());
  EXPECT_EQ(EncoderConfig::Tiny().heads_in_layer(1), 2);
  EXPECT_EQ(EncoderConfig::Tiny().ffn_in_layer(1), 512);
}

TEST(EncoderConfigTest, PruningRecordRoundTripsAsHuggingFaceWritesIt) {
  const EncoderConfig c =
      EncoderConfig::Tiny().heads(4).layers(3).pruned_heads({{1, 3}, {}, {0}}).layer_ffn(
          {512, 256, 16});
  const std::string json = c.ToJson();
  EXPECT_NE(json.find("\"pruned_heads\": {"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"1\": []"), std::string::npos) << "layers without pruning are left out";
  absl::StatusOr<EncoderConfig> back = EncoderConfig::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), json);
  EXPECT_EQ(back->pruned_heads(), c.pruned_heads());
  EXPECT_EQ(back->layer_ffn(), c.layer_ffn());
  // An unpruned config writes neither field (older readers see nothing new).
  EXPECT_EQ(EncoderConfig::Tiny().ToJson().find("pruned"), std::string::npos);
  EXPECT_EQ(EncoderConfig::Tiny().ToJson().find("layer_ffn"), std::string::npos);
}

TEST(EncoderConfigTest, DamagedPruningRecordIsAClearError) {
  const std::string base = R"({"hidden": 128, "heads": 4, "layers": 2, "ffn": 512, )";
  const std::pair<const char*, const char*> cases[] = {
      {R"("pruned_heads": [1])", "must be an object"},
      {R"("pruned_heads": {"x": [1]})", "not a layer index"},
      {R"("pruned_heads": {"2": [1]})", "not a layer index"},
      {R"("pruned_heads": {"0": 1})", "must list head indices"},
      {R"("pruned_heads": {"0": ["a"]})", "non-integer"},
      {R"("pruned_heads": {"0": [4]})", "not in [0, 4)"},
      {R"("pruned_heads": {"0": [-1]})", "not in [0, 4)"},
      {R"("pruned_heads": {"0": [2, 1]})", "sorted and unique"},
      {R"("pruned_heads": {"0": [1, 1]})", "sorted and unique"},
      {R"("pruned_heads": {"1": [0, 1, 2, 3]})", "keep no head"},
      {R"("layer_ffn": 12)", "array of integers"},
      {R"("layer_ffn": [12.5, 3])", "array of integers"},
      {R"("layer_ffn": [12])", "1 sizes for 2 layers"},
      {R"("layer_ffn": [0, 12])", "not in [1, ffn 512]"},
      {R"("layer_ffn": [513, 12])", "not in [1, ffn 512]"},
  };
  for (const auto& [field, needle] : cases) {
    const std::string json = base + field + "}";
    absl::StatusOr<EncoderConfig> c = EncoderConfig::FromJson(json, "dir/config.json");
    ASSERT_FALSE(c.ok()) << json;
    const std::string message(c.status().message());
    EXPECT_NE(message.find("dir/config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << json << " -> " << message;
  }
}

}  // namespace
}  // namespace padless::models

namespace padless::models {
namespace {

// ModernBERT's fields (issue 45) round-trip; a BERT config's JSON does not carry them, and a
// config without them (every model directory before them) is BERT.
TEST(EncoderConfigTest, ModernBertFieldsRoundTrip) {
  const EncoderConfig c = EncoderConfig::ModernBertBase()
                              .local_attention(64)
                              .global_attn_every_n_layers(2)
                              .local_rope_theta(500.0)
                              .norm_bias(true)
                              .pooling(Pooling::kMean);
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  absl::StatusOr<EncoderConfig> back = EncoderConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  EXPECT_TRUE(back->modernbert());
  EXPECT_EQ(back->local_attention(), 64);
  EXPECT_EQ(back->local_rope_theta(), 500.0);
  EXPECT_FALSE(back->attention_bias());
  EXPECT_TRUE(back->norm_bias());
  EXPECT_EQ(back->classifier_hidden(), ClassifierHidden::kGeluNorm);
  EXPECT_EQ(back->attention_window(0), -1);
  EXPECT_EQ(back->attention_window(1), 32);
  EXPECT_EQ(back->attention_window(2), -1);
  EXPECT_EQ(EncoderConfig::Base().attention_window(1), -1);
  EXPECT_EQ(EncoderConfig::Base().ToJson().find("architecture"), std::string::npos);
  absl::StatusOr<EncoderConfig> old = EncoderConfig::FromJson(R"({"hidden": 64, "heads": 4})");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->modernbert());
  EXPECT_TRUE(old->attention_bias() && old->mlp_bias() && old->norm_bias() &&
              old->classifier_bias());
}

TEST(EncoderConfigTest, ModernBertValidationNamesTheField) {
  const auto message = [](const EncoderConfig& c) { return std::string(c.Validate().message()); };
  EXPECT_NE(message(EncoderConfig().mlp_bias(false)).find("mlp_bias"), std::string::npos);
  EXPECT_NE(message(EncoderConfig::ModernBertBase().pre_ln(false)).find("pre_ln"),
            std::string::npos);
  EXPECT_NE(message(EncoderConfig::ModernBertBase().type_vocab_size(2)).find("type_vocab_size"),
            std::string::npos);
  EXPECT_NE(message(EncoderConfig::ModernBertBase().hidden(36).heads(12)).find("head_dim"),
            std::string::npos);
  EXPECT_NE(message(EncoderConfig::ModernBertBase().global_attn_every_n_layers(0))
                .find("global_attn_every_n_layers"),
            std::string::npos);
  for (const char* bad : {R"({"architecture": "gpt"})", R"({"architecture": 1})",
                          R"({"norm_bias": "no"})", R"({"local_attention": 1.5})"}) {
    absl::StatusOr<EncoderConfig> c = EncoderConfig::FromJson(bad, "dir/config.json");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(std::string(c.status().message()).find("dir/config.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace padless::models
