// DistEnvFromEnvironment: torchrun's variables, a lone process, and errors that name the variable.
#include "padless/distributed/dist_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace padless::distributed {
namespace {

absl::StatusOr<DistEnv> Read(const std::map<std::string, std::string>& vars) {
  return DistEnvFromEnvironment([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(DistEnvTest, NothingSetIsOneProcess) {
  absl::StatusOr<DistEnv> env = Read({});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->distributed());
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
}

TEST(DistEnvTest, ReadsTorchrunVariables) {
  absl::StatusOr<DistEnv> env = Read({{"RANK", "3"},
                                      {"WORLD_SIZE", "8"},
                                      {"LOCAL_RANK", "1"},
                                      {"MASTER_ADDR", "node0"},
                                      {"MASTER_PORT", "29511"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->distributed());
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "node0");
  EXPECT_EQ(env->master_port, 29511);
}

TEST(DistEnvTest, ErrorsNameTheVariable) {
  absl::StatusOr<DistEnv> env =
      Read({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("RANK"), std::string::npos) << env.status();
  env = Read({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("RANK='2'"), std::string::npos) << env.status();
  env = Read({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_PORT", "1"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("MASTER_ADDR"), std::string::npos) << env.status();
  env = Read({{"WORLD_SIZE", "x"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("WORLD_SIZE='x'"), std::string::npos) << env.status();
}

}  // namespace
}  // namespace padless::distributed
