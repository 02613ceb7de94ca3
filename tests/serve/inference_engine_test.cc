// The inference engine: concurrent submitters each get exactly their own results, equal to the
// model run one sequence at a time; windows average probabilities and logits; truncate=false;
// cancellation (explicit and by dropping the handle) of work not yet on the device; a full queue
// refuses whole submissions and loses nothing it accepted; Shutdown finishes work in flight and
// then refuses; bad options fail at Create; FP8 weights (amp fp8) batch like one at a time; the
// attention backend chosen in the options runs every batch, and CUDA-only ones are refused on the
// CPU.
#include "padless/serve/inference_engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "padless/model_files/model_io.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "serve_fixtures.h"

namespace padless::serve {
namespace {

using testing::Words;

// The model's answer for one request, computed apart from the engine: each sequence alone, through
// the generic (unfused) layers with autograd off, windows averaged.
EngineResult Reference(model_files::LoadedModel& m, const EngineRequest& r, const EngineOptions& o) {
  tokenize::EncodeOptions encode;
  encode.max_length = o.max_len;
  std::vector<tokenize::Encoding> sequences;
  if (o.long_text == LongText::kWindows && !r.pair.has_value()) {
    sequences = *m.tokenizer.EncodeWindows(r.text, o.max_len, o.window_stride);
  } else {
    sequences.push_back(r.pair.has_value() ? *m.tokenizer.EncodePair(r.text, *r.pair, encode)
                                           : *m.tokenizer.Encode(r.text, encode));
  }
  at::NoGradGuard no_grad;
  at::Tensor probabilities = at::zeros({m.config.num_labels()}, at::kDouble);
  at::Tensor scores = at::zeros({m.config.num_labels()}, at::kDouble);
  EngineResult c;
  for (const tokenize::Encoding& e : sequences) {
    const int64_t n = static_cast<int64_t>(e.ids.size());
    batching::Batch b;
    b.layout = batching::Layout::kVarlen;
    b.num_sequences = 1;
    b.real_tokens = n;
    b.max_seqlen = n;
    b.input_ids = at::tensor(std::vector<int64_t>(e.ids.begin(), e.ids.end()), at::kLong);
    b.position_ids = at::arange(n, at::kLong);
    if (!e.type_ids.empty()) {
      b.token_type_ids = at::tensor(std::vector<int64_t>(e.type_ids.begin(), e.type_ids.end()));
    }
    b.cu_seqlens = at::tensor(std::vector<int32_t>{0, static_cast<int32_t>(n)}, at::kInt);
    models::AutocastGuard autocast(at::kCPU, o.amp);
    const at::Tensor logits = m.model->forward(b)[0].to(at::kDouble);
    scores += logits;
    probabilities += at::softmax(logits, 0);
    c.tokens += n;
  }
  const double windows = static_cast<double>(sequences.size());
  for (int64_t k = 0; k < m.config.num_labels(); ++k) {
    c.probabilities.push_back(static_cast<float>(probabilities[k].item<double>() / windows));
    c.scores.push_back(static_cast<float>(scores[k].item<double>() / windows));
  }
  c.label_id = at::argmax(probabilities).item<int64_t>();
  return c;
}

void ExpectSame(const absl::StatusOr<EngineResult>& got, const EngineResult& want,
                const std::string& what, double tolerance = 1e-5) {
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  ASSERT_EQ(got->probabilities.size(), want.probabilities.size()) << what;
  ASSERT_EQ(got->scores.size(), want.scores.size()) << what;
  for (size_t k = 0; k < want.probabilities.size(); ++k) {
    EXPECT_NEAR(got->probabilities[k], want.probabilities[k], tolerance) << what << " label " << k;
    EXPECT_NEAR(got->scores[k], want.scores[k], tolerance) << what << " label " << k;
  }
  EXPECT_EQ(got->label_id, want.label_id) << what;
  EXPECT_EQ(got->tokens, want.tokens) << what;
}

// Mixed requests: empty texts, short and long ones (far over the 32-token max_len), pairs.
std::vector<EngineRequest> MixedRequests(int n) {
  std::vector<EngineRequest> out;
  for (int k = 0; k < n; ++k) {
    EngineRequest r;
    switch (k % 6) {
      case 0:
        break;  // empty: [CLS][SEP]
      case 1:
        r.text = Words(3, k);
        break;
      case 2:
        r.text = Words(12, k);
        break;
      case 3:
        r.text = Words(150 + k, k);
        break;
      case 4:
        r.text = Words(5, k);
        r.pair = Words(9, k + 1);
        break;
      default:
        r.text = Words(40, k);
        r.pair = Words(60, k + 2);
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// A gate the batch observer waits at: it holds the completion thread, so batches stay in flight
// and the batcher stops dispatching (it keeps at most two in flight).
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrivals_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void WaitForArrivals(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return arrivals_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int arrivals_ = 0;
};

class InferenceEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new std::string(testing::WriteSmallModelDir("engine")); }
  static void TearDownTestSuite() { delete dir_; }

  static std::unique_ptr<InferenceEngine> Make(const EngineOptions& options) {
    absl::StatusOr<std::unique_ptr<InferenceEngine>> e = InferenceEngine::Load(*dir_, options);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }
  static model_files::LoadedModel ReferenceModel() {
    model_files::LoadedModel m = *model_files::LoadModelDir(*dir_, at::kCPU);
    models::ModelRuntime runtime;
    runtime.fused_layers = false;
    m.model->set_runtime(runtime);
    return m;
  }

  static std::string* dir_;
};
std::string* InferenceEngineTest::dir_ = nullptr;

class ConcurrentTest : public InferenceEngineTest,
                       public ::testing::WithParamInterface<LongText> {};

// Many callers at once, in small batches that mix them: each gets its own results, equal to the
// reference, in its order.
TEST_P(ConcurrentTest, EachSubmitterGetsItsOwnResults) {
  EngineOptions options;
  options.max_len = 32;
  options.long_text = GetParam();
  options.window_stride = 6;
  options.max_batch_tokens = 96;
  options.max_batch_requests = 7;
  options.max_batch_delay = std::chrono::microseconds(200);
  options.tokenizer_threads = 3;
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  const std::vector<EngineRequest> pool = MixedRequests(36);
  model_files::LoadedModel m = ReferenceModel();
  std::vector<EngineResult> reference;
  for (const EngineRequest& r : pool) reference.push_back(Reference(m, r, engine->options()));

  constexpr int kThreads = 96;
  // Poisoned: a result the engine never delivered shows up as NaN and label -1.
  EngineResult poison;
  poison.probabilities.assign(3, std::numeric_limits<float>::quiet_NaN());
  poison.scores = poison.probabilities;
  poison.label_id = -1;
  std::vector<std::vector<size_t>> asked(kThreads);
  std::vector<std::vector<absl::StatusOr<EngineResult>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    for (int j = 0; j <= t % 4; ++j) asked[t].push_back((t * 5 + j * 7) % pool.size());
    got[t].assign(asked[t].size(), poison);
    threads.emplace_back([&, t] {
      std::vector<EngineRequest> mine;
      for (size_t i : asked[t]) mine.push_back(pool[i]);
      absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> r = engine->Run(mine);
      if (r.ok()) got[t] = std::move(*r);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), asked[t].size()) << "thread " << t;
    for (size_t j = 0; j < asked[t].size(); ++j) {
      ExpectSame(got[t][j], reference[asked[t][j]],
                 "thread " + std::to_string(t) + " request " + std::to_string(asked[t][j]));
    }
  }
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.queued, 0);
  EXPECT_EQ(stats.accepted, stats.completed);
  EXPECT_EQ(stats.rejected, 0);
  EXPECT_GT(stats.batches, 1);
}

INSTANTIATE_TEST_SUITE_P(LongTexts, ConcurrentTest,
                         ::testing::Values(LongText::kHeadTail, LongText::kWindows));

TEST_F(InferenceEngineTest, BatchStatsCountEverySequence) {
  EngineOptions options;
  options.max_batch_tokens = 40;
  options.long_text = LongText::kWindows;
  options.window_stride = 4;
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  std::mutex mu;
  int64_t sequences = 0;
  int64_t tokens = 0;
  engine->SetBatchObserver([&](const BatchStats& s) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_LE(s.tokens, 40);
    EXPECT_GE(s.device_time.count(), 0);
    sequences += s.sequences;
    tokens += s.tokens;
  });
  const std::vector<EngineRequest> requests = MixedRequests(12);
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> r = engine->Run(requests);
  ASSERT_TRUE(r.ok()) << r.status();
  int64_t want_tokens = 0;
  for (const auto& c : *r) {
    ASSERT_TRUE(c.ok()) << c.status();
    want_tokens += c->tokens;
  }
  engine->Shutdown();  // the observer has seen every batch
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(tokens, want_tokens);
  EXPECT_GT(sequences, static_cast<int64_t>(requests.size()));  // long texts have windows
}

TEST_F(InferenceEngineTest, TruncateFalseRefusesTextsOverMaxLen) {
  std::unique_ptr<InferenceEngine> engine = Make(EngineOptions());
  ASSERT_NE(engine, nullptr);
  std::vector<EngineRequest> requests(4);
  requests[0].text = Words(200, 1);
  requests[0].truncate = false;
  requests[1].text = Words(3, 2);
  requests[1].truncate = false;
  requests[2].text = Words(20, 3);
  requests[2].pair = Words(20, 4);
  requests[2].truncate = false;
  requests[3].text = Words(200, 1);  // truncate: cut, classified
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> r = engine->Run(requests);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(absl::IsInvalidArgument((*r)[0].status())) << (*r)[0].status();
  EXPECT_NE(std::string((*r)[0].status().message()).find("max_len 32"), std::string::npos);
  EXPECT_TRUE((*r)[1].ok()) << (*r)[1].status();
  EXPECT_TRUE(absl::IsInvalidArgument((*r)[2].status())) << (*r)[2].status();
  ASSERT_TRUE((*r)[3].ok()) << (*r)[3].status();
  EXPECT_EQ((*r)[3]->tokens, 32);
  EXPECT_EQ(engine->stats().completed, 4);
}

TEST_F(InferenceEngineTest, CancelDropsWorkNotYetOnTheDevice) {
  EngineOptions options;
  options.max_batch_requests = 1;  // one request per batch: which batch holds what is known
  options.tokenizer_threads = 1;   // and requests reach the batcher in submission order
  Gate gate;  // outlives the engine: its batches call the observer until its Shutdown
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  engine->SetBatchObserver([&](const BatchStats&) { gate.Wait(); });
  const std::vector<EngineRequest> one = {EngineRequest{Words(4, 1), std::nullopt, true, std::nullopt, false}};
  absl::StatusOr<RequestHandle> first = engine->Submit(one);  // its completion waits at the gate
  ASSERT_TRUE(first.ok());
  gate.WaitForArrivals(1);
  absl::StatusOr<RequestHandle> second = engine->Submit(one);  // the second batch in flight
  ASSERT_TRUE(second.ok());
  const std::vector<EngineRequest> three(3, one[0]);
  absl::StatusOr<RequestHandle> cancelled = engine->Submit(three);  // waits for a free slot
  ASSERT_TRUE(cancelled.ok());
  {
    absl::StatusOr<RequestHandle> dropped = engine->Submit(three);
    ASSERT_TRUE(dropped.ok());
  }  // destroyed: cancelled
  cancelled->Cancel();
  ASSERT_TRUE(cancelled->WaitFor(std::chrono::seconds(10)));  // set at once, not after the gate
  for (const auto& r : cancelled->Wait()) EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
  gate.Open();
  for (RequestHandle* h : {&*first, &*second}) {
    std::vector<absl::StatusOr<EngineResult>> r = h->Wait();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].ok()) << r[0].status();
  }
  engine->Shutdown();
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.cancelled, 6);
  EXPECT_EQ(stats.completed, 8);
  EXPECT_EQ(stats.queued, 0);
  EXPECT_EQ(stats.batches, 2);  // the cancelled requests never reached the device
}

TEST_F(InferenceEngineTest, FullQueueRefusesWholeSubmissionsAndLosesNothing) {
  EngineOptions options;
  options.max_queued_requests = 8;
  options.max_batch_requests = 1;
  options.tokenizer_threads = 1;
  Gate gate;  // outlives the engine: its batches call the observer until its Shutdown
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  engine->SetBatchObserver([&](const BatchStats&) { gate.Wait(); });
  const std::vector<EngineRequest> five(5, EngineRequest{Words(6, 3), std::nullopt, true, std::nullopt, false});
  std::vector<RequestHandle> accepted;
  absl::StatusOr<RequestHandle> a = engine->Submit(five);
  ASSERT_TRUE(a.ok()) << a.status();
  accepted.push_back(std::move(*a));
  absl::StatusOr<RequestHandle> b = engine->Submit(five);  // 5 + 5 > 8: none of them
  EXPECT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  const std::vector<EngineRequest> three(five.begin(), five.begin() + 3);
  absl::StatusOr<RequestHandle> c = engine->Submit(three);  // exactly full
  ASSERT_TRUE(c.ok()) << c.status();
  accepted.push_back(std::move(*c));
  EXPECT_TRUE(absl::IsResourceExhausted(engine->Submit(three).status()));
  const std::vector<EngineRequest> nine(9, five[0]);
  EXPECT_TRUE(absl::IsResourceExhausted(engine->Submit(nine).status()));
  EXPECT_EQ(engine->stats().queued, 8);
  gate.Open();
  for (RequestHandle& h : accepted) {
    for (const auto& r : h.Wait()) EXPECT_TRUE(r.ok()) << r.status();
  }
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.accepted, 8);
  EXPECT_EQ(stats.completed, 8);
  EXPECT_EQ(stats.rejected, 5 + 3 + 9);
  // Room again once the queue drains.
  EXPECT_TRUE(engine->Submit(nine.size() > 8 ? five : nine).ok());
}

TEST_F(InferenceEngineTest, ShutdownFinishesAcceptedWorkThenRefuses) {
  EngineOptions options;
  options.max_batch_tokens = 64;
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<RequestHandle> h = engine->Submit(MixedRequests(20));
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(std::move(*h));
  }
  engine->Shutdown();
  EXPECT_TRUE(absl::IsUnavailable(engine->Submit(MixedRequests(1)).status()));
  engine->Shutdown();  // idempotent
  engine.reset();      // the handles outlive the engine; their results are set
  for (RequestHandle& h : handles) {
    ASSERT_TRUE(h.WaitFor(std::chrono::seconds(0)));
    for (const auto& r : h.Wait()) EXPECT_TRUE(r.ok()) << r.status();
  }
}

TEST_F(InferenceEngineTest, EmptySubmissionAndDefaultHandle) {
  std::unique_ptr<InferenceEngine> engine = Make(EngineOptions());
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<RequestHandle> h = engine->Submit({});
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->Wait().empty());
  RequestHandle none;
  EXPECT_TRUE(none.WaitFor(std::chrono::seconds(0)));
  EXPECT_TRUE(none.Wait().empty());
  none.Cancel();
}

TEST_F(InferenceEngineTest, BadOptionsFailAtLoad) {
  const auto invalid = [&](const EngineOptions& o) {
    absl::StatusOr<std::unique_ptr<InferenceEngine>> e = InferenceEngine::Load(*dir_, o);
    return !e.ok() && absl::IsInvalidArgument(e.status());
  };
  EngineOptions o;
  o.max_batch_tokens = 31;  // max_len is clamped to the model's 32 positions
  EXPECT_TRUE(invalid(o));
  o.max_batch_tokens = 32;
  EXPECT_TRUE(InferenceEngine::Load(*dir_, o).ok());
  for (int64_t bad : {0, -1}) {
    EngineOptions b;
    b.max_len = bad;
    EXPECT_TRUE(invalid(b));
    b = EngineOptions();
    b.max_batch_tokens = bad;
    EXPECT_EQ(invalid(b), bad < 0);  // 0: by device
    b = EngineOptions();
    b.max_batch_requests = bad;
    EXPECT_TRUE(invalid(b));
    b = EngineOptions();
    b.max_queued_requests = bad;
    EXPECT_TRUE(invalid(b));
  }
  EngineOptions b;
  b.max_len = 2;
  EXPECT_TRUE(invalid(b));
  b = EngineOptions();
  b.tokenizer_threads = -1;
  EXPECT_TRUE(invalid(b));
  b = EngineOptions();
  b.max_batch_delay = std::chrono::microseconds(-1);
  EXPECT_TRUE(invalid(b));
  b = EngineOptions();
  b.long_text = LongText::kWindows;
  b.window_stride = 30;
  EXPECT_TRUE(invalid(b));
  EXPECT_FALSE(InferenceEngine::Load(*dir_ + "/missing", EngineOptions()).ok());
}

// amp fp8: the layers' GEMMs in FP8 (emulated exactly on the CPU). Per-token scales make a text's
// result independent of its batch, so concurrent batching still equals the FP8 model run one
// sequence at a time; and FP8 stays close to fp32.
TEST_F(InferenceEngineTest, Fp8WeightsBatchLikeOneAtATimeAndStayCloseToFp32) {
  EngineOptions options;
  options.amp = models::AmpMode::kFp8;
  options.max_batch_tokens = 96;
  options.max_batch_requests = 5;
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  // amp fp8 computes in bf16 (the autocast dtype) around the FP8 GEMMs, here as in the engine.
  model_files::LoadedModel fp8_model = *model_files::LoadModelDir(*dir_, at::kCPU);
  fp8_model.model->PrepareInference(at::kBFloat16, /*fp8_weights=*/true);
  model_files::LoadedModel fp32_model = ReferenceModel();
  const std::vector<EngineRequest> pool = MixedRequests(24);
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> got = engine->Run(pool);
  ASSERT_TRUE(got.ok()) << got.status();
  EngineOptions fp32_options = engine->options();
  fp32_options.amp = models::AmpMode::kOff;
  double max_fp32_gap = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    // bf16 rounding of the logits (2^-9 relative) may differ with the batch's shape.
    ExpectSame((*got)[i], Reference(fp8_model, pool[i], engine->options()),
               "request " + std::to_string(i), 2e-3);
    const EngineResult fp32 = Reference(fp32_model, pool[i], fp32_options);
    for (size_t k = 0; k < fp32.probabilities.size(); ++k) {
      max_fp32_gap = std::max<double>(
          max_fp32_gap, std::abs((*got)[i]->probabilities[k] - fp32.probabilities[k]));
    }
  }
  EXPECT_GT(max_fp32_gap, 0.0);   // FP8 ran
  EXPECT_LT(max_fp32_gap, 0.02);
}

// int8 weights on the CPU: close to fp32 (activations are quantized per batch, so not equal to
// a one-at-a-time run: a bound, not an equality); refused off the CPU or with amp.
TEST_F(InferenceEngineTest, Int8WeightsStayCloseToFp32) {
  EngineOptions options;
  options.int8_weights = true;
  options.max_batch_tokens = 96;
  std::unique_ptr<InferenceEngine> engine = Make(options);
  ASSERT_NE(engine, nullptr);
  model_files::LoadedModel fp32_model = ReferenceModel();
  const std::vector<EngineRequest> pool = MixedRequests(24);
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> got = engine->Run(pool);
  ASSERT_TRUE(got.ok()) << got.status();
  double max_gap = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    ASSERT_TRUE((*got)[i].ok()) << (*got)[i].status();
    const EngineResult fp32 = Reference(fp32_model, pool[i], engine->options());
    for (size_t k = 0; k < fp32.probabilities.size(); ++k) {
      max_gap = std::max<double>(max_gap,
                                 std::abs((*got)[i]->probabilities[k] - fp32.probabilities[k]));
    }
  }
  EXPECT_GT(max_gap, 0.0);
  EXPECT_LT(max_gap, 0.02);
  EngineOptions bad = options;
  bad.amp = models::AmpMode::kBf16;
  EXPECT_TRUE(absl::IsInvalidArgument(InferenceEngine::Load(*dir_, bad).status()));
}

TEST_F(InferenceEngineTest, Fp8NeedsAPostLnModel) {
  model_files::LoadedModel m = *model_files::LoadModelDir(*dir_, at::kCPU);
  m.config = testing::SmallConfig(m.config.vocab_size(), 3).pre_ln(true);
  m.model = models::EncoderClassifier(m.config);
  EngineOptions options;
  options.amp = models::AmpMode::kFp8;
  absl::StatusOr<std::unique_ptr<InferenceEngine>> e =
      InferenceEngine::Create(std::move(m), options);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  EXPECT_NE(e.status().message().find("post-LN"), std::string::npos) << e.status();
}

// EngineOptions::attention reaches the model's runtime (kAuto leaves it as loaded), and the CPU
// backends give the answers of the model run one sequence at a time.
TEST_F(InferenceEngineTest, AttentionChoiceRunsEveryBatch) {
  using models::AttentionBackend;
  const std::vector<EngineRequest> pool = MixedRequests(12);
  model_files::LoadedModel m = ReferenceModel();
  for (AttentionBackend backend : {AttentionBackend::kAuto, AttentionBackend::kVarlenGrouped,
                                   AttentionBackend::kVarlenReference, AttentionBackend::kDense}) {
    const std::string name = models::AttentionBackendName(backend);
    EngineOptions options;
    options.attention = backend;
    options.max_batch_tokens = 96;
    std::unique_ptr<InferenceEngine> engine = Make(options);
    ASSERT_NE(engine, nullptr) << name;
    EXPECT_EQ(engine->model().model->runtime().attention, backend) << name;
    absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> got = engine->Run(pool);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    for (size_t i = 0; i < pool.size(); ++i) {
      ExpectSame((*got)[i], Reference(m, pool[i], engine->options()),
                 name + " request " + std::to_string(i));
    }
  }
}

// The CUDA-only backends are refused at load on the CPU, naming the backend and the device.
TEST_F(InferenceEngineTest, CudaOnlyAttentionIsRefusedOnTheCpu) {
  using models::AttentionBackend;
  for (AttentionBackend backend : {AttentionBackend::kVarlenFlash, AttentionBackend::kVarlenFa3,
                                   AttentionBackend::kVarlenCudnn,
                                   AttentionBackend::kVarlenEfficient}) {
    EngineOptions options;
    options.attention = backend;
    absl::StatusOr<std::unique_ptr<InferenceEngine>> e = InferenceEngine::Load(*dir_, options);
    ASSERT_FALSE(e.ok()) << models::AttentionBackendName(backend);
    EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
    EXPECT_NE(e.status().message().find(absl::StrCat(
                  "attention ", models::AttentionBackendName(backend),
                  ": runs on CUDA devices only, not on device cpu")),
              std::string::npos)
        << e.status();
  }
}

// max_batch_tokens 0 (the default) resolves by device: 2048 on the CPU.
TEST_F(InferenceEngineTest, DefaultBatchTokensFollowTheDevice) {
  std::unique_ptr<InferenceEngine> engine = Make(EngineOptions());
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->options().max_batch_tokens, 2048);
}

TEST(ParseLongTextTest, NamesAndErrors) {
  EXPECT_EQ(*ParseLongText("head_tail"), LongText::kHeadTail);
  EXPECT_EQ(*ParseLongText("windows"), LongText::kWindows);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseLongText("middle").status()));
}

}  // namespace
}  // namespace padless::serve
