// Nodes without a shared filesystem, on the CPU (Gloo): launchers as nodes on this machine, each
// with its own --out directory, as hosts with node-local disks would run them. Every node's first
// rank builds the token cache on its own disk and the job trains exactly as one node with one
// directory; only rank 0's node gets the model and the checkpoints, and --resume on a node without
// them names the missing file; a node whose data differs stops every node with a message naming
// it; nodes that share a directory tokenize it once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli_runner.h"
#include "padless/distributed/local_launcher.h"

// A namespace of its own: the suite is a unity build, and the other CLI tests have helpers of the
// same names.
namespace padless::distributed::node_local_disks_test {
namespace {

using cli::testing::CliResult;
using cli::testing::ReadFile;
using cli::testing::RunPadless;
using cli::testing::ScratchDir;
using cli::testing::WriteFile;

// 240 short labeled lines: label 1 iff the word "good" occurs; `seed` varies the texts.
std::string SyntheticTsv(unsigned seed = 5) {
  const std::vector<std::string> words = {"the",   "movie", "plot", "actor",  "scene", "long",
                                          "music", "story", "film", "ending", "dull",  "fine"};
  std::mt19937 rng(seed);
  std::string tsv = "label\ttext\n";
  for (int i = 0; i < 240; ++i) {
    std::string text;
    const int n = 4 + static_cast<int>(rng() % 12);
    for (int w = 0; w < n; ++w) text += words[rng() % words.size()] + " ";
    if (i % 2 == 0) text += "good";
    tsv += absl::StrCat(i % 2 == 0 ? 1 : 0, "\t", text, "\n");
  }
  return tsv;
}

std::vector<std::string> TrainArgs(const std::string& data, const std::string& out, int nproc) {
  return {"train",
          "--nproc-per-node",
          std::to_string(nproc),
          "--data",
          data,
          "--out",
          out,
          "--preset",
          "tiny",
          "--max-steps",
          "4",
          "--max-len",
          "24",
          "--max-tokens",
          "192",
          "--vocab-size",
          "30",
          "--device",
          "cpu",
          "--threads",
          "1",
          "--dev-fraction",
          "0.2",
          "--checkpoint-every",
          "2",
          "--dist-timeout",
          "20"};
}

// One node of the job: its --out and --data.
struct Node {
  std::string out;
  std::string data;
};

// Runs one launcher per node (in threads, as separate hosts would), each of `nproc` workers,
// meeting at a free port of this machine; `extra` goes to every node.
std::vector<CliResult> RunNodes(const std::vector<Node>& nodes, int nproc,
                                const std::vector<std::string>& extra = {}) {
  const std::string port = std::to_string(FreeLocalPort());
  std::vector<CliResult> results(nodes.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < nodes.size(); ++k) {
    threads.emplace_back([&, k] {
      std::vector<std::string> args = TrainArgs(nodes[k].data, nodes[k].out, nproc);
      args.insert(args.end(),
                  {"--nnodes", std::to_string(nodes.size()), "--node-rank", std::to_string(k),
                   "--master-addr", "127.0.0.1", "--master-port", port});
      args.insert(args.end(), extra.begin(), extra.end());
      results[k] = RunPadless(args);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

TEST(NodeLocalDisksTest, TwoNodesWithTheirOwnDirectoriesTrainLikeOneNodeWithOne) {
  const std::string dir = ScratchDir("node_local_disks");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  const CliResult one = RunPadless(TrainArgs(dir + "/d.tsv", dir + "/one", 2));
  ASSERT_EQ(one.exit_code, 0) << one.err;

  const std::vector<Node> nodes = {{dir + "/node0", dir + "/d.tsv"},
                                   {dir + "/node1", dir + "/d.tsv"}};
  std::vector<CliResult> r = RunNodes(nodes, 1);
  ASSERT_EQ(r[0].exit_code, 0) << r[0].err;
  ASSERT_EQ(r[1].exit_code, 0) << r[1].err;
  EXPECT_TRUE(absl::StrContains(r[1].err,
                                "[rank 1] token cache: built " + dir + "/node1/train_tokens.cache"))
      << r[1].err;
  const std::string weights = ReadFile(dir + "/node0/model.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(weights == ReadFile(dir + "/one/model.safetensors"))
      << "two nodes with their own directories must train exactly as one node with one";
  // Rank 0's node alone holds the model and the checkpoints.
  EXPECT_FALSE(std::filesystem::exists(dir + "/node1/model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/node1/checkpoints"));
  ASSERT_TRUE(std::filesystem::exists(dir + "/node0/checkpoints/step-00000004.pt"));

  // --resume on a node without the checkpoints: every node stops, naming the missing file.
  r = RunNodes(nodes, 1, {"--resume"});
  EXPECT_EQ(r[0].exit_code, 1) << r[0].err;
  EXPECT_EQ(r[1].exit_code, 1) << r[1].err;
  EXPECT_TRUE(absl::StrContains(
      r[1].err, "rank 0 resumes from the checkpoint of step 4, but this node (node 1) has no " +
                    dir + "/node1/checkpoints/step-00000004.pt"))
      << r[1].err;
  EXPECT_TRUE(absl::StrContains(r[1].err, "checkpoints are written on rank 0's node only"))
      << r[1].err;
  EXPECT_TRUE(absl::StrContains(r[0].err, "node 1 (rank 1) has no checkpoint of step 4"))
      << r[0].err;

  // With rank 0's checkpoints copied to the other node, the resume goes on.
  std::filesystem::copy(dir + "/node0/checkpoints", dir + "/node1/checkpoints");
  r = RunNodes(nodes, 1, {"--resume"});
  EXPECT_EQ(r[0].exit_code, 0) << r[0].err;
  EXPECT_EQ(r[1].exit_code, 0) << r[1].err;
}

TEST(NodeLocalDisksTest, ANodeWithOtherDataStopsEveryNodeNamingIt) {
  const std::string dir = ScratchDir("node_other_data");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  WriteFile(dir + "/other.tsv", SyntheticTsv(6));
  const std::vector<CliResult> r =
      RunNodes({{dir + "/node0", dir + "/d.tsv"}, {dir + "/node1", dir + "/other.tsv"}}, 1);
  for (const CliResult& node : r) {
    EXPECT_EQ(node.exit_code, 1) << node.err;
    EXPECT_TRUE(absl::StrContains(node.err,
                                  "the token cache fingerprint differs between nodes: node 1 "
                                  "(rank 1) has "))
        << node.err;
    EXPECT_TRUE(absl::StrContains(node.err, "every node needs the same --data file")) << node.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/node1/train_tokens.cache"))
      << "nothing is built before the nodes agree";
}

// Nodes 0 and 1 share one directory, nodes 2 and 3 another: the cache is built once in each, by
// rank 0 and by node 2 (the lower node of the pair that rank 0 does not share), and only hit by
// nodes 1 and 3.
TEST(NodeLocalDisksTest, NodesSharingADirectoryTokenizeItOnce) {
  const std::string dir = ScratchDir("node_shared_dirs");
  WriteFile(dir + "/d.tsv", SyntheticTsv());
  const std::string a = dir + "/a", b = dir + "/b", data = dir + "/d.tsv";
  const std::vector<CliResult> r = RunNodes({{a, data}, {a, data}, {b, data}, {b, data}}, 1);
  for (const CliResult& node : r) ASSERT_EQ(node.exit_code, 0) << node.err;
  EXPECT_TRUE(absl::StrContains(r[0].err, "[rank 0] token cache: built " + a)) << r[0].err;
  EXPECT_TRUE(absl::StrContains(r[1].err, "[rank 1] token cache: hit " + a)) << r[1].err;
  EXPECT_TRUE(absl::StrContains(r[2].err, "[rank 2] token cache: built " + b)) << r[2].err;
  EXPECT_TRUE(absl::StrContains(r[3].err, "[rank 3] token cache: hit " + b)) << r[3].err;
  for (const auto& entry : std::filesystem::directory_iterator(b)) {
    EXPECT_FALSE(absl::StrContains(entry.path().string(), ".claim-")) << "left behind";
  }
}

}  // namespace
}  // namespace padless::distributed::node_local_disks_test
