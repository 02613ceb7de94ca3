// LaunchLocalWorkers: torchrun's variables reach every worker, on one node or on two launched
// apart; a failing worker ends the job at once (the others are terminated, no hang) with an error
// naming its rank and its last line.
#include "padless/distributed/local_launcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "padless/base/read_file.h"
#include "padless/distributed/process_group.h"
#include "trainer_fixtures.h"

namespace padless::distributed {
namespace {

LaunchOptions Workers(int nproc) {
  LaunchOptions options;
  options.nproc = nproc;
  return options;
}

// What worker `rank`'s script wrote to <dir>/rank.<rank> (an error text when it wrote nothing).
std::string WorkerFile(const train::testing::TempDir& dir, int rank) {
  absl::StatusOr<std::string> text = base::ReadFile(dir.file(absl::StrCat("rank.", rank)));
  return text.ok() ? *text : text.status().ToString();
}

TEST(LocalLauncherTest, EveryWorkerGetsTorchrunsEnvironment) {
  train::testing::TempDir dir;
  const std::string script = "echo $RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR > " + dir.str() +
                             "/rank.$RANK; [ -n \"$MASTER_PORT\" ]";
  ASSERT_TRUE(LaunchLocalWorkers({"/bin/sh", "-c", script}, Workers(3)).ok());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(WorkerFile(dir, r), absl::StrCat(r, " ", r, " 3 127.0.0.1\n"));
  }
}

// Two "nodes" of two workers each on this machine, each node its own launcher, as two hosts
// would run them: global ranks, node ranks and the same meeting point.
TEST(LocalLauncherTest, TwoNodesGetTorchrunsMultiNodeEnvironment) {
  train::testing::TempDir dir;
  const std::string script =
      "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK "
      "$MASTER_ADDR $MASTER_PORT > " +
      dir.str() + "/rank.$RANK";
  const int port = FreeLocalPort();
  std::vector<absl::Status> results(2);
  std::vector<std::thread> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.emplace_back([&, node] {
      LaunchOptions o = Workers(2);
      o.nnodes = 2;
      o.node_rank = node;
      o.master_addr = "127.0.0.1";
      o.master_port = port;
      results[node] = LaunchLocalWorkers({"/bin/sh", "-c", script}, o);
    });
  }
  for (std::thread& t : nodes) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(WorkerFile(dir, r),
              absl::StrCat(r, " ", r % 2, " 4 2 ", r / 2, " 127.0.0.1 ", port, "\n"));
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

// A worker that hangs (never joins the collective) makes the others time out; the launcher names
// the hung worker, not the one that timed out first, and terminates it.
TEST(LocalLauncherTest, AHungWorkerIsNamedWhenTheOthersTimeOut) {
  LaunchOptions options = Workers(2);
  options.grace = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  const absl::Status s = LaunchLocalWorkers(
      {"/bin/sh", "-c",
       absl::StrCat("if [ $RANK = 1 ]; then exec sleep 60; fi; sleep 0.2; echo 'all-reduce ",
                    kPeerFailed, "' >&2; exit 1")},
      options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(s.message(), absl::StrCat("rank 1 of 2 hung: it was still running when rank 0 "
                                      "failed with 'all-reduce ",
                                      kPeerFailed, "'; terminated"));
  EXPECT_LT(seconds, 10) << "the hung rank must be terminated, not waited for";
}

TEST(LocalLauncherTest, BadArguments) {
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({}, LaunchOptions{})));
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({"/bin/true"}, Workers(0))));
  LaunchOptions o = Workers(1);
  o.nnodes = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({"/bin/true"}, o)));
  o.nnodes = 2;
  o.node_rank = 2;
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({"/bin/true"}, o)));
  o.node_rank = 1;  // several nodes without the meeting point
  const absl::Status s = LaunchLocalWorkers({"/bin/true"}, o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("master_addr"), std::string::npos) << s;
  o.master_addr = "127.0.0.1";
  o.master_port = 70000;
  EXPECT_TRUE(absl::IsInvalidArgument(LaunchLocalWorkers({"/bin/true"}, o)));
}

}  // namespace
}  // namespace padless::distributed
