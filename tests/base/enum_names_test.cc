// The name tables of padless's enums (padless/base/enum_names.h): canonical names and aliases
// parse, EnumToName answers the canonical name, and an unknown name lists the canonical ones.
#include "padless/base/enum_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::base {
namespace {

using ::testing::HasSubstr;

enum class Color { kRed, kGreen, kBlue };

constexpr EnumName<Color> kColors[] = {{"red", Color::kRed},
                                       {"green", Color::kGreen},
                                       {"vert", Color::kGreen},  // an alias: accepted, not listed
                                       {"blue", Color::kBlue}};

TEST(EnumNamesTest, CanonicalNamesAndAliasesParse) {
  EXPECT_EQ(*ParseEnum("color", "red", kColors), Color::kRed);
  EXPECT_EQ(*ParseEnum("color", "green", kColors), Color::kGreen);
  EXPECT_EQ(*ParseEnum("color", "vert", kColors), Color::kGreen);
  EXPECT_EQ(*ParseEnum("color", "blue", kColors), Color::kBlue);
}

TEST(EnumNamesTest, NamesAreTheFirstRowOfTheirValueAndRoundTrip) {
  EXPECT_EQ(EnumToName(Color::kGreen, kColors), "green");
  for (Color c : {Color::kRed, Color::kGreen, Color::kBlue}) {
    EXPECT_EQ(*ParseEnum("color", EnumToName(c, kColors), kColors), c);
  }
  EXPECT_EQ(EnumToName(static_cast<Color>(7), kColors), "?");
}

TEST(EnumNamesTest, UnknownNamesListTheCanonicalOnes) {
  const absl::StatusOr<Color> bad = ParseEnum("color", "Red", kColors);  // names are exact
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown color 'Red' (expected red, green or blue)");
  EXPECT_THAT(std::string(ParseEnum("color", "", kColors).status().message()),
              HasSubstr("unknown color ''"));
}

TEST(EnumNamesTest, ListsOfOneAndTwo) {
  constexpr EnumName<Color> kOne[] = {{"red", Color::kRed}};
  constexpr EnumName<Color> kTwo[] = {{"red", Color::kRed}, {"blue", Color::kBlue}};
  EXPECT_EQ(CanonicalNames(kOne), "red");
  EXPECT_EQ(CanonicalNames(kTwo), "red or blue");
  EXPECT_EQ(CanonicalNames(kColors), "red, green or blue");
}

}  // namespace
}  // namespace padless::base
