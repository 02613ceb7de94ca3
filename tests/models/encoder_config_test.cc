// EncoderConfig: presets, validation naming the field, and the JSON round trip a model directory
// uses.
#include "padless/models/encoder_config.h"

#include <gtest/gtest.h>

#include <string>

namespace padless::models {
namespace {

TEST(EncoderConfigTest, BaseIsBertBase) {
  const EncoderConfig c = EncoderConfig::Base();
  EXPECT_EQ(c.layers(), 12);
  EXPECT_EQ(c.hidden(), 768);
  EXPECT_EQ(c.heads(), 12);
  EXPECT_EQ(c.ffn(), 3072);
  EXPECT_TRUE(c.Validate().ok());
  for (const char* name : {"tiny", "small", "base"}) {
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

}  // namespace
}  // namespace padless::models
