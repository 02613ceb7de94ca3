// Resident memory of the corpus cache: writing a corpus through CorpusCacheWriter, mapping it, and
// reading one shard each raise a process's peak resident set by a small fraction of the corpus, so
// a corpus several times larger than the memory a rank may use can be cached and trained on.
// Measured in a forked child (its own peak, VmHWM of /proc/self/status, reset where the kernel
// allows) so that the test runner's own allocations do not count.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "padless/corpus/corpus_cache_writer.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::corpus {
namespace {

constexpr uint64_t kFingerprint = 99;
constexpr int64_t kTokensPerExample = 256;  // 1 KiB of tokens per example
constexpr int64_t kExamples = 128 * 1024;   // 128 MiB of tokens
constexpr int64_t kCorpusBytes = kExamples * kTokensPerExample * 4;
constexpr int64_t kShards = 16;                // one shard: 8 MiB
constexpr int64_t kBudget = kCorpusBytes / 8;  // what each step may add to the peak: 16 MiB

// Peak resident set of this process, in bytes.
int64_t PeakRss() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kb = 0;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// Resets the peak to the current resident set (Linux >= 4.0); harmless where it is refused, as the
// growth is measured against the peak before each step.
void ResetPeak() { std::ofstream("/proc/self/clear_refs") << "5"; }

struct Growth {
  int64_t build = 0, load = 0, shard = 0, all = 0;
};

// The child's work: each step's growth of the peak over the peak before it.
Growth MeasureInThisProcess(const std::string& path) {
  Growth g;
  ResetPeak();
  int64_t before = PeakRss();
  {
    absl::StatusOr<std::unique_ptr<CorpusCacheWriter>> w =
        CorpusCacheWriter::Open(path, kFingerprint);
    if (!w.ok()) return {-1, -1, -1, -1};
    std::vector<int32_t> ids(kTokensPerExample);
    for (int64_t i = 0; i < kExamples; ++i) {
      for (int64_t k = 0; k < kTokensPerExample; ++k)
        ids[k] = static_cast<int32_t>((i + k) % 30000);
      if (!(*w)->Add(ids, {}, i % 2).ok()) return {-1, -1, -1, -1};
    }
    if (!(*w)->Commit().ok()) return {-1, -1, -1, -1};
  }
  g.build = PeakRss() - before;
  ResetPeak();
  before = PeakRss();
  absl::StatusOr<TokenizedCorpus> corpus = TokenizedCorpus::Load(path, kFingerprint);
  if (!corpus.ok() || corpus->size() != static_cast<size_t>(kExamples)) return {-1, -1, -1, -1};
  g.load = PeakRss() - before;
  ResetPeak();
  before = PeakRss();
  const size_t per_shard = corpus->size() / kShards, first = 5 * per_shard;
  int64_t checksum = 0;
  for (size_t i = first; i < first + per_shard; ++i) {
    if (!corpus->VerifyExample(i).ok()) return {-1, -1, -1, -1};
    for (int32_t id : corpus->tokens(i)) checksum += id;
  }
  g.shard = checksum > 0 ? PeakRss() - before : -1;
  // The control: reading every example does make the whole corpus resident, so the measurement
  // would see a reader that touched more than its shard.
  for (size_t i = 0; i < corpus->size(); ++i) {
    for (int32_t id : corpus->tokens(i)) checksum += id;
  }
  g.all = checksum > 0 ? PeakRss() - before : -1;
  return g;
}

TEST(MappedCorpusMemoryTest, CorpusEightTimesTheBudgetIsBuiltMappedAndShardedWithinIt) {
  const std::string path = ::testing::TempDir() + "/mapped_corpus_memory_test.cache";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    const Growth g = MeasureInThisProcess(path);
    const std::array<int64_t, 4> out = {g.build, g.load, g.shard, g.all};
    const ssize_t n = write(fds[1], out.data(), sizeof(out));
    _exit(n == static_cast<ssize_t>(sizeof(out)) ? 0 : 1);
  }
  close(fds[1]);
  std::array<int64_t, 4> got{};
  const ssize_t n = read(fds[0], got.data(), sizeof(got));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  std::remove(path.c_str());
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof(got)));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto [build, load, shard, all] = got;
  ASSERT_GE(build, 0) << "the child failed to build, load or read the cache";
  const int64_t mib = 1024 * 1024;
  RecordProperty("build_growth_mib", std::to_string(build / mib));
  RecordProperty("load_growth_mib", std::to_string(load / mib));
  RecordProperty("shard_growth_mib", std::to_string(shard / mib));
  // Building holds 16 bytes per example (2 MiB), not the 128 MiB of tokens.
  EXPECT_LT(build, kBudget) << "build raised the peak by " << build / mib << " MiB";
  // Opening reads the index only (offsets and labels: 2 MiB, read and copied).
  EXPECT_LT(load, kBudget) << "load raised the peak by " << load / mib << " MiB";
  // One shard of 8 MiB: its pages and blocks, not the other 120 MiB.
  EXPECT_LT(shard, kBudget) << "one shard raised the peak by " << shard / mib << " MiB";
  EXPECT_GT(all, kCorpusBytes / 2) << "reading everything raised the peak by only " << all / mib
                                   << " MiB: the measurement does not see mapped pages";
}

}  // namespace
}  // namespace padless::corpus
