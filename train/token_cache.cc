#include "token_cache.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/corpus/corpus_cache.h"
#include "padless/corpus/corpus_cache_builder.h"
#include "padless/corpus/corpus_split.h"

namespace padless::train {
namespace {

namespace tok = padless::tokenize;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What the reader options change in the examples read.
std::string DescribeReader(const corpus::ReaderOptions& r) {
  return absl::StrCat("format=", static_cast<int>(r.format), " label=", r.label_field,
                      " text=", r.text_field, " pair=", r.text_pair_field,
                      " header=", static_cast<int>(r.header), " skip_bad=", r.skip_bad_rows);
}

tok::EncodeOptions EncodeOptionsOf(const TrainJobOptions& o) {
  tok::EncodeOptions encode = o.encode;
  encode.max_length = o.max_len;
  return encode;
}

void SayHowOpened(const OpenedTokenCache& c) {
  const std::string how =
      c.how == OpenedTokenCache::How::kBuilt ? "built"
      : c.how == OpenedTokenCache::How::kHit
          ? "hit"
          : absl::StrCat("mapped (rank ", c.opened_by, "'s; not tokenized here)");
  absl::FPrintF(stderr, "token cache: %s %s, %d examples, %d tokens, %.2f s\n", how, c.path,
                c.corpus.size(), c.corpus.total_tokens(), c.seconds);
}

}  // namespace

std::string TokenCachePath(const TrainJobOptions& o) {
  return o.token_cache.empty() ? base::JoinPath(o.out, kTokenCacheFile) : o.token_cache;
}

absl::StatusOr<uint64_t> TokenCacheFingerprint(const TrainJobOptions& o,
                                               const tok::Tokenizer& tokenizer) {
  return corpus::CacheFingerprint(
      {o.data}, tokenizer,
      absl::StrCat(corpus::DescribeOptions(EncodeOptionsOf(o)), " ", DescribeReader(o.reader)));
}

absl::StatusOr<OpenedTokenCache> OpenOrBuildTokenCache(const TrainJobOptions& o,
                                                       const tok::Tokenizer& tokenizer,
                                                       uint64_t fingerprint) {
  const auto start = std::chrono::steady_clock::now();
  OpenedTokenCache c;
  c.path = TokenCachePath(o);
  c.fingerprint = fingerprint;
  absl::StatusOr<corpus::TokenizedCorpus> hit = corpus::TokenizedCorpus::Load(c.path, fingerprint);
  if (hit.ok() && hit->label_names().empty()) {  // not one this job wrote: no label map in it
    hit = absl::FailedPreconditionError("the cache has no label names");
  }
  if (!hit.ok()) {
    if (!o.quiet) {
      absl::FPrintF(stderr, "token cache: building %s from %s (%s)\n", c.path, o.data,
                    hit.status().message());
    }
    // The model directory is written later (SaveModelDir); the default cache lives in it.
    if (o.token_cache.empty()) {
      if (absl::Status s = base::MakeDirectories(o.out); !s.ok()) return s;
    }
    corpus::CacheBuildOptions build;
    build.reader = o.reader;
    build.reader.require_label = true;
    build.encode.encode = EncodeOptionsOf(o);
    build.encode.num_threads = o.threads;
    absl::StatusOr<corpus::CacheBuildReport> built =
        corpus::BuildCorpusCache(o.data, tokenizer, build, c.path, fingerprint);
    if (!built.ok()) return built.status();
    hit = corpus::TokenizedCorpus::Load(c.path, fingerprint);
    if (!hit.ok()) return hit.status();
    c.how = OpenedTokenCache::How::kBuilt;
  }
  c.corpus = *std::move(hit);
  c.seconds = SecondsSince(start);
  if (!o.quiet) SayHowOpened(c);
  return c;
}

absl::StatusOr<OpenedTokenCache> MapNodesTokenCache(const TrainJobOptions& o, uint64_t fingerprint,
                                                    int opened_by, bool quiet) {
  const auto start = std::chrono::steady_clock::now();
  OpenedTokenCache c;
  c.path = TokenCachePath(o);
  c.fingerprint = fingerprint;
  c.how = OpenedTokenCache::How::kMapped;
  c.opened_by = opened_by;
  absl::StatusOr<corpus::TokenizedCorpus> mapped =
      corpus::TokenizedCorpus::Load(c.path, fingerprint);
  if (!mapped.ok()) {
    return absl::Status(mapped.status().code(),
                        absl::StrCat("the token cache rank ", opened_by,
                                     " (this node's first) opened: ", mapped.status().message()));
  }
  c.corpus = *std::move(mapped);
  c.seconds = SecondsSince(start);
  if (!quiet) SayHowOpened(c);
  return c;
}

CachedSplit HoldOutOfCache(const corpus::TokenizedCorpus& corpus, double fraction, uint64_t seed) {
  if (fraction <= 0) return {corpus, std::nullopt};
  const std::vector<bool> chosen =
      corpus::SplitMask(corpus.size(), static_cast<size_t>(fraction * corpus.size()), seed);
  std::vector<size_t> train, dev;
  for (size_t i = 0; i < corpus.size(); ++i) (chosen[i] ? dev : train).push_back(i);
  if (dev.empty()) return {corpus, std::nullopt};
  return {corpus.Subset(train), corpus.Subset(dev)};
}

}  // namespace padless::train
