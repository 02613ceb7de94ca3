#include "trainer_fixtures.h"

#include <ATen/ATen.h>
#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace padless::train::testing {

corpus::TokenizedCorpus SyntheticCorpus(uint64_t seed, int64_t n) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> len(4, 20), tok(10, 49), coin(0, 1);
  corpus::TokenizedCorpus c;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> ids = {2};
    const int32_t l = len(rng);
    for (int32_t k = 0; k < l; ++k) ids.push_back(tok(rng));
    const int64_t label = coin(rng);
    if (label == 1) ids[1 + rng() % l] = 7;
    ids.push_back(3);
    c.Add(ids, {}, label);
  }
  return c;
}

models::EncoderConfig TinyConfig(double dropout) {
  return models::EncoderConfig()
      .vocab_size(50)
      .hidden(32)
      .layers(2)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .num_labels(2)
      .dropout(dropout)
      .attention_dropout(dropout);
}

batching::PlannerOptions Plan(batching::Sampler sampler) {
  return batching::PlannerOptions()
      .sampler(sampler)
      .batch_size(sampler == batching::Sampler::kPacked ? 2 : 8)
      .max_len(64);
}

TrainConfig Quiet() { return TrainConfig().progress(false).loader_workers(0); }

std::vector<at::Tensor> Params(models::EncoderClassifier& m) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

bool BitwiseEqual(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i], b[i])) return false;
  }
  return true;
}

GradScalerOptions NoLossScaling() {
  GradScalerOptions options;
  options.enabled = false;
  return options;
}

bool AllFinite(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (!at::isfinite(t).all().item<bool>()) return false;
  }
  return true;
}

namespace {
int RemoveEntry(const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }
}  // namespace

TempDir::TempDir() {
  char tmpl[] = "/tmp/padless_models_test_XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  if (made == nullptr) std::abort();
  path_ = made;
}

TempDir::~TempDir() { ::nftw(path_.c_str(), RemoveEntry, 8, FTW_DEPTH | FTW_PHYS); }

std::vector<std::string> FilesEndingWith(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
        out.push_back(name);
      }
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace padless::train::testing
