#include "padless/batching/loader.h"

#include <torch/cuda.h>

#include <atomic>
#include <stdexcept>

#include "corpus_test_util.h"
#include "gtest/gtest.h"
#include "padless/batching/planner.h"

namespace padless::batching {
namespace {

using testing::RandomCorpus;

class LoaderTest : public ::testing::Test {
 protected:
  LoaderTest() : corpus_(RandomCorpus(400, 21, 300)) {
    plan_ = *Planner(PlannerOptions().sampler(Sampler::kPacked).batch_size(2).max_len(128))
                 .Plan(corpus_.Lengths(), 0);
  }
  std::unique_ptr<Loader> Make(int workers, int prefetch = 3,
                               std::function<absl::Status(Batch&)> transform = nullptr) {
    LoaderOptions o;
    o.num_workers = workers;
    o.prefetch = prefetch;
    o.transform = std::move(transform);
    absl::StatusOr<std::unique_ptr<Loader>> loader = Loader::Create(&corpus_, plan_, o);
    EXPECT_TRUE(loader.ok()) << loader.status();
    return std::move(*loader);
  }
  corpus::TokenizedCorpus corpus_;
  std::vector<BatchSpec> plan_;
};

TEST_F(LoaderTest, SameOrderAndContentForAnyNumberOfWorkers) {
  ASSERT_GT(plan_.size(), 20u);
  const Collator collator;
  for (int workers : {0, 1, 4}) {
    std::atomic<int> built{0};
    std::unique_ptr<Loader> loader = Make(workers, 3, [&](Batch&) {
      ++built;
      return absl::OkStatus();
    });
    EXPECT_EQ(loader->size(), static_cast<int64_t>(plan_.size()));
    for (size_t i = 0; i < plan_.size(); ++i) {
      absl::StatusOr<std::optional<Batch>> b = loader->Next();
      ASSERT_TRUE(b.ok()) << b.status();
      ASSERT_TRUE(b->has_value()) << "batch " << i << " missing with " << workers << " workers";
      absl::StatusOr<Batch> expect = collator.Collate(corpus_, plan_[i]);
      ASSERT_TRUE(expect.ok());
      ASSERT_TRUE((*b)->example_ids.equal(expect->example_ids)) << "batch " << i;
      ASSERT_TRUE((*b)->input_ids.equal(expect->input_ids)) << "batch " << i;
      ASSERT_TRUE((*b)->cu_seqlens.equal(expect->cu_seqlens)) << "batch " << i;
    }
    absl::StatusOr<std::optional<Batch>> end = loader->Next();
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(end->has_value());
    EXPECT_EQ(loader->position(), static_cast<int64_t>(plan_.size()));
    EXPECT_EQ(built.load(), static_cast<int>(plan_.size())) << "each batch built exactly once";
  }
}

TEST_F(LoaderTest, ExceptionInWorkerReachesConsumerWithContext) {
  // Batch 5 throws; batches 0-4 arrive intact, then the error, which names the batch.
  const int64_t bad = plan_[5].rows[0][0].example;
  for (int workers : {0, 1, 4}) {
    std::unique_ptr<Loader> loader = Make(workers, 4, [bad](Batch& b) -> absl::Status {
      if (b.example_ids[0].item<int64_t>() == bad) throw std::runtime_error("tokenizer exploded");
      return absl::OkStatus();
    });
    for (int i = 0; i < 5; ++i) {
      absl::StatusOr<std::optional<Batch>> b = loader->Next();
      ASSERT_TRUE(b.ok() && b->has_value()) << "batch " << i;
    }
    absl::StatusOr<std::optional<Batch>> failed = loader->Next();
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find("batch 5 of"), std::string::npos) << failed.status();
    EXPECT_NE(failed.status().message().find("tokenizer exploded"), std::string::npos);
    // The loader stays failed rather than skipping the batch.
    EXPECT_EQ(loader->Next().status(), failed.status());
  }
}

TEST_F(LoaderTest, ErrorStatusFromTransformOrCollatorPropagates) {
  std::unique_ptr<Loader> loader =
      Make(2, 2, [](Batch&) { return absl::DataLossError("bad mask"); });
  absl::StatusOr<std::optional<Batch>> b = loader->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(b.status().message().find("batch 0"), std::string::npos);

  std::vector<BatchSpec> broken = {plan_[0], plan_[1]};
  broken[1].rows[0][0].example = 1 << 30;
  LoaderOptions o;
  o.num_workers = 3;
  absl::StatusOr<std::unique_ptr<Loader>> l = Loader::Create(&corpus_, broken, o);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->Next().ok());
  b = (*l)->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("batch 1 of 2"), std::string::npos) << b.status();
  EXPECT_NE(b.status().message().find("outside the corpus"), std::string::npos) << b.status();
}

TEST_F(LoaderTest, ShutdownMidEpochNeitherHangsNorLeaks) {
  for (int round = 0; round < 20; ++round) {
    std::unique_ptr<Loader> loader = Make(4, 2);
    for (int i = 0; i < round % 3; ++i) ASSERT_TRUE(loader->Next().ok());
    if (round % 2 == 0) {
      loader->Shutdown();
      absl::StatusOr<std::optional<Batch>> after = loader->Next();
      ASSERT_TRUE(after.ok());
      EXPECT_FALSE(after->has_value());
      loader->Shutdown();  // idempotent
    }
    // Otherwise the destructor stops the workers, which wait on a full queue.
  }
}

TEST_F(LoaderTest, RejectsBadOptions) {
  LoaderOptions o;
  o.prefetch = 0;
  EXPECT_FALSE(Loader::Create(&corpus_, plan_, o).ok());
  o.prefetch = 1;
  o.num_workers = -1;
  EXPECT_FALSE(Loader::Create(&corpus_, plan_, o).ok());
  EXPECT_FALSE(Loader::Create(nullptr, plan_, LoaderOptions()).ok());
  if (!torch::cuda::is_available()) {
    o.num_workers = 1;
    o.device = c10::Device(c10::kCUDA, 0);
    EXPECT_FALSE(Loader::Create(&corpus_, plan_, o).ok());
  }
}

TEST_F(LoaderTest, DeliversPinnedBatchesOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  LoaderOptions o;
  o.num_workers = 2;
  o.device = c10::Device(c10::kCUDA, 0);
  absl::StatusOr<std::unique_ptr<Loader>> loader = Loader::Create(&corpus_, plan_, o);
  ASSERT_TRUE(loader.ok());
  const Collator collator;
  for (size_t i = 0; i < plan_.size(); ++i) {
    absl::StatusOr<std::optional<Batch>> b = (*loader)->Next();
    ASSERT_TRUE(b.ok() && b->has_value());
    ASSERT_TRUE((*b)->input_ids.is_cuda());
    ASSERT_TRUE((*b)->cu_seqlens.is_cuda());
    ASSERT_TRUE((*b)->input_ids.cpu().equal(collator.Collate(corpus_, plan_[i])->input_ids));
  }
}

}  // namespace
}  // namespace padless::batching
