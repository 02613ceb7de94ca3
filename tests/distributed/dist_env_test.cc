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
  EXPECT_EQ(env->local_world_size, 8);  // unset: one node
  EXPECT_EQ(env->node_rank, 0);
  EXPECT_EQ(env->nodes(), 1);
}

// torchrun across nodes: LOCAL_WORLD_SIZE ranks a node, GROUP_RANK the node (or derived).
TEST(DistEnvTest, ReadsTheNodeLayout) {
  std::map<std::string, std::string> vars = {{"RANK", "5"},          {"WORLD_SIZE", "8"},
                                             {"LOCAL_RANK", "1"},    {"LOCAL_WORLD_SIZE", "4"},
                                             {"MASTER_ADDR", "n0"},  {"MASTER_PORT", "29500"},
                                             {"GROUP_RANK", "1"}};
  absl::StatusOr<DistEnv> env = Read(vars);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->local_world_size, 4);
  EXPECT_EQ(env->node_rank, 1);
  EXPECT_EQ(env->nodes(), 2);
  vars.erase("GROUP_RANK");
  env = Read(vars);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->node_rank, 1);  // rank 5 / 4 ranks a node
  for (const char* bad : {"0", "9", "x"}) {
    vars["LOCAL_WORLD_SIZE"] = bad;
    env = Read(vars);
    ASSERT_FALSE(env.ok()) << bad;
    EXPECT_NE(env.status().message().find(std::string("LOCAL_WORLD_SIZE='") + bad),
              std::string::npos)
        << env.status();
  }
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
