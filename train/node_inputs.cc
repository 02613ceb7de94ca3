#include "node_inputs.h"

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "padless/base/atomic_file_writer.h"
#include "padless/base/directory.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::train {
namespace {

namespace tok = padless::tokenize;
using distributed::DataParallel;

// What a rank says about its node's token cache in the one all-gather before it is opened.
enum class Said : int64_t { kNotFirst = 0, kFingerprinted = 1, kFailed = 2 };

struct RankReport {
  int node = 0;
  int local_rank = 0;
  Said said = Said::kNotFirst;
  uint64_t fingerprint = 0;
};

struct Agreement {
  std::vector<RankReport> ranks;  // by rank
  uint64_t fingerprint = 0;       // rank 0's
  uint64_t nonce = 0;             // rank 0's random number: names this job's claim files
};

constexpr size_t kFields = 5;

absl::StatusOr<Agreement> Gather(const DataParallel& dp, Said said, uint64_t fingerprint,
                                 uint64_t nonce) {
  absl::StatusOr<std::vector<int64_t>> all =
      dp.group->AllGatherHost({dp.node_rank(), dp.local_rank(), static_cast<int64_t>(said),
                               static_cast<int64_t>(fingerprint), static_cast<int64_t>(nonce)});
  if (!all.ok()) return all.status();
  Agreement a;
  for (size_t at = 0; at + kFields <= all->size(); at += kFields) {
    const int64_t* f = all->data() + at;
    a.ranks.push_back({static_cast<int>(f[0]), static_cast<int>(f[1]), static_cast<Said>(f[2]),
                       static_cast<uint64_t>(f[3])});
  }
  a.fingerprint = static_cast<uint64_t>((*all)[3]);
  a.nonce = static_cast<uint64_t>((*all)[4]);
  return a;
}

// The same verdict on every rank, from the same reports: every node has a first rank, and each
// fingerprinted its own data file to rank 0's fingerprint.
absl::Status CheckAgreement(const Agreement& a) {
  std::set<int> nodes, nodes_with_first;
  std::vector<std::string> differ;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const RankReport& report = a.ranks[r];
    nodes.insert(report.node);
    if (report.local_rank == 0) nodes_with_first.insert(report.node);
    if (report.said == Said::kFailed) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", r, " (the first of node ", report.node,
          ") could not fingerprint its training data; its own error says why (every node needs "
          "the --data file at the same path)"));
    }
    if (report.said == Said::kFingerprinted && report.fingerprint != a.fingerprint) {
      differ.push_back(
          absl::StrFormat("node %d (rank %d) has %016x", report.node, r, report.fingerprint));
    }
  }
  for (int node : nodes) {
    if (nodes_with_first.count(node) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", node, " has no rank with LOCAL_RANK 0 to open its token cache"));
    }
  }
  if (differ.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "the token cache fingerprint differs between nodes: %s, rank 0 (node %d) has %016x; every "
      "node needs the same --data file (byte for byte), tokenizer and encoding options",
      absl::StrJoin(differ, ", "), a.ranks[0].node, a.fingerprint));
}

// The first rank of the node of `node`: the rank whose cache the node's other ranks map.
int FirstRankOf(const Agreement& a, int node) {
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    if (a.ranks[r].node == node && a.ranks[r].local_rank == 0) return static_cast<int>(r);
  }
  return 0;  // CheckAgreement ruled this out
}

// Whether `path` holds a complete cache of `fingerprint` that this job can use.
bool HoldsCache(const std::string& path, uint64_t fingerprint) {
  absl::StatusOr<corpus::TokenizedCorpus> cache = corpus::TokenizedCorpus::Load(path, fingerprint);
  return cache.ok() && !cache->label_names().empty();
}

// Who builds a missing cache. Shared filesystem: rank 0 finished its cache before any other rank
// started (they waited at the start barrier), so a node whose path is rank 0's finds the file
// complete with the agreed fingerprint and only opens it; nothing is built twice, and no two
// ranks ever write one file. Node-local disks: each node's first rank misses and builds on its
// own disk, all nodes at once. Nodes that share a disk with one another but not with rank 0 would
// all miss together: each of them first leaves a claim file beside the cache (named by the job's
// nonce and its node), and after a barrier it builds only if no lower node's claim is visible at
// its own path; the others wait for the next barrier and then open what that node built. So no
// two nodes write the same path at once (their temporary files, `<path>.tmp.<pid>`, could even
// collide: pids repeat across hosts and containers).
std::string ClaimPath(const std::string& cache, uint64_t nonce, int node) {
  return absl::StrFormat("%s.claim-%016x-node%d", cache, nonce, node);
}

bool ALowerNodeBuilds(const Agreement& a, const std::string& cache, int node) {
  for (const RankReport& r : a.ranks) {
    if (r.local_rank == 0 && r.node < node &&
        base::IsRegularFile(ClaimPath(cache, a.nonce, r.node))) {
      return true;
    }
  }
  return false;
}

// This node's first rank, when the cache at its path is missing or stale: claims the build.
absl::StatusOr<std::string> ClaimBuild(const std::string& cache, uint64_t nonce, int node) {
  if (absl::Status s = base::MakeDirectories(base::ParentDirectory(cache)); !s.ok()) return s;
  const std::string claim = ClaimPath(cache, nonce, node);
  if (absl::Status s = base::WriteFileAtomically(claim, ""); !s.ok()) return s;
  return claim;
}

uint64_t RandomNonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

absl::StatusOr<std::optional<tok::Tokenizer>> ShareRankZerosTokenizer(
    const DataParallel& dp, const tok::Tokenizer* rank_zeros) {
  // The file name travels first, so that a backend rebuilt from the bytes as another one (an
  // XLM-R model read as a plain SentencePiece model) is not taken for rank 0's.
  std::string bytes = rank_zeros == nullptr
                          ? std::string()
                          : absl::StrCat(rank_zeros->file_name(), "\n", rank_zeros->Serialized());
  if (absl::Status s = dp.group->BroadcastHostBytes(bytes, 0); !s.ok()) return s;
  if (rank_zeros != nullptr) return std::nullopt;
  const size_t newline = bytes.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  absl::StatusOr<tok::Tokenizer> tokenizer =
      tok::Tokenizer::FromSerialized(bytes.substr(newline + 1));
  if (!tokenizer.ok() || tokenizer->file_name() != bytes.substr(0, newline)) return std::nullopt;
  return *std::move(tokenizer);
}

absl::Status AgreeOnTokenCacheAsRankZero(const DataParallel& dp, uint64_t fingerprint) {
  absl::StatusOr<Agreement> a = Gather(dp, Said::kFingerprinted, fingerprint, RandomNonce());
  if (!a.ok()) return a.status();
  if (absl::Status s = CheckAgreement(*a); !s.ok()) return s;
  if (absl::Status s = dp.group->Barrier(); !s.ok()) return s;  // the claims are made
  return dp.group->Barrier();                                   // every node's cache is there
}

absl::StatusOr<OpenedTokenCache> OpenTokenCacheOnNode(const TrainJobOptions& o,
                                                      const tok::Tokenizer& tokenizer, bool say) {
  const DataParallel& dp = o.train.data_parallel();
  const bool first = dp.local_rank() == 0;
  absl::StatusOr<uint64_t> mine = first ? TokenCacheFingerprint(o, tokenizer) : uint64_t{0};
  const Said said = !first ? Said::kNotFirst : mine.ok() ? Said::kFingerprinted : Said::kFailed;
  absl::StatusOr<Agreement> a = Gather(dp, said, mine.ok() ? *mine : 0, 0);
  if (!a.ok()) return a.status();
  if (!mine.ok()) return mine.status();
  if (absl::Status s = CheckAgreement(*a); !s.ok()) return s;

  const std::string path = TokenCachePath(o);
  std::string claim;
  if (first && !HoldsCache(path, a->fingerprint)) {
    absl::StatusOr<std::string> claimed = ClaimBuild(path, a->nonce, dp.node_rank());
    if (!claimed.ok()) return claimed.status();
    claim = *claimed;
  }
  if (absl::Status s = dp.group->Barrier(); !s.ok()) return s;
  TrainJobOptions own = o;
  own.quiet = !say;
  std::optional<absl::StatusOr<OpenedTokenCache>> built;
  if (!claim.empty() && !ALowerNodeBuilds(*a, path, dp.node_rank())) {
    built = OpenOrBuildTokenCache(own, tokenizer, a->fingerprint);
  }
  // Every claim stays until the barrier after which no rank looks for claims any more.
  absl::Status ready = built && !built->ok() ? built->status() : dp.group->Barrier();
  if (!claim.empty()) base::RemoveFile(claim);
  if (!ready.ok()) return ready;
  if (built) return **std::move(built);
  // A node's first rank that found the cache, or waited for a lower node to build it, opens it.
  if (first) return OpenOrBuildTokenCache(own, tokenizer, a->fingerprint);
  return MapNodesTokenCache(o, a->fingerprint, FirstRankOf(*a, dp.node_rank()), !say);
}

}  // namespace padless::train
