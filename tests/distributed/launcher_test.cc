// LaunchLocalWorkers: torchrun's variables reach every worker; a failing worker ends the job at
// once (the others are terminated, no hang) with an error naming its rank and its last line.
#include "padless/distributed/local_launcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "trainer_fixtures.h"

namespace padless::distributed {
namespace {

LaunchOptions Workers(int nproc) {
  LaunchOptions options;
  options.nproc = nproc;
  return options;
}

TEST(LocalLauncherTest, EveryWorkerGetsTorchrunsEnvironment) {
  models::testing::TempDir dir;
  const std::string script = "echo $RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR > " + dir.str() +
                             "/rank.$RANK; [ -n \"$MASTER_PORT\" ]";
  ASSERT_TRUE(LaunchLocalWorkers({"/bin/sh", "-c", script}, Workers(3)).ok());
  for (int r = 0; r < 3; ++r) {
    std::ifstream in(dir.file("rank." + std::to_string(r)));
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), absl::StrCat(r, " ", r, " 3 127.0.0.1\n"));
  }
}

TEST(LocalLauncherTest, AFailingWorkerEndsTheJobAndIsNamed) {
  LaunchOptions options = Workers(3);
  options.grace = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  const absl::Status s = LaunchLocalWorkers(
      {"/bin/sh", "-c",
       "if [ $RANK = 1 ]; then echo 'first line' >&2; echo 'rank one broke' >&2; exit 3; fi; "
       "exec sleep 60"},
      options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(s.message(), "rank 1 of 3 failed (exit code 3): rank one broke");
  EXPECT_LT(seconds, 10) << "the sleeping ranks must be terminated, not waited for";
}

TEST(LocalLauncherTest, BadArguments) {
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({}, LaunchOptions{})));
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({"/bin/true"}, Workers(0))));
}

}  // namespace
}  // namespace padless::distributed
