#include "padless/serve/inference_engine.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "batch_former.h"
#include "completion.h"
#include "cpu_host_setup.h"
#include "device_worker.h"
#include "embedding_head.h"
#include "engine_counters.h"
#include "engine_options.h"
#include "graphed_forward.h"
#include "padless/models/encoder.h"
#include "padless/models/model_runtime.h"
#include "pipeline.h"
#include "request_state.h"
#include "tokenizer_pool.h"
#include "work_queue.h"

namespace padless::serve {

using internal::WorkQueue;

namespace {

// EngineOptions::attention onto the model's runtime, before any CUDA graph is captured: a graph
// replays the kernels it captured. kAuto leaves the runtime as loaded (or as Create's caller set
// it), today's per-batch choice.
void ApplyAttention(models::AttentionBackend attention, models::EncoderClassifierImpl& model) {
  if (attention == models::AttentionBackend::kAuto) return;
  models::ModelRuntime runtime = model.runtime();
  runtime.attention = attention;
  model.set_runtime(runtime);
}

}  // namespace

// The stages, their queues and the admission state. Stages are started in Start() and stopped
// upstream first in Stop(), each draining what it was given before the next is closed.
struct InferenceEngine::Impl {
  Impl(model_files::LoadedModel m, EngineOptions o, ModelKind k,
       std::optional<internal::EmbeddingHead> e)
      : model(std::move(m)), options(o), kind(k), embedding(std::move(e)) {}
  // Starts the stages; the device worker takes `graphs` (null: every batch eager).
  void Start(std::unique_ptr<internal::GraphedForward> graphs);
  void Stop();
  void BatchFinished(const BatchStats& stats);

  model_files::LoadedModel model;
  const EngineOptions options;
  const ModelKind kind;
  const std::optional<internal::EmbeddingHead> embedding;  // kEmbedding only
  const std::shared_ptr<internal::EngineCounters> counters =
      std::make_shared<internal::EngineCounters>();

  std::mutex admission_mu;  // orders admissions; guards stopping
  bool stopping = false;
  std::mutex shutdown_mu;  // a second Shutdown() waits for the first
  bool stopped = false;
  std::mutex observer_mu;
  std::function<void(const BatchStats&)> observer;

  WorkQueue<internal::WorkItem> to_tokenize;
  WorkQueue<internal::FormedBatch> to_device;
  WorkQueue<internal::ScoredBatch> to_complete;
  std::unique_ptr<internal::BatchFormer> former;
  std::unique_ptr<internal::DeviceWorker> worker;
  std::unique_ptr<internal::Completion> completion;
  std::unique_ptr<internal::TokenizerPool> tokenizers;
};

void InferenceEngine::Impl::Start(std::unique_ptr<internal::GraphedForward> graphs) {
  internal::BatchLimits limits;
  limits.max_tokens = options.max_batch_tokens;
  limits.max_sequences = options.max_batch_requests;
  limits.max_delay = options.max_batch_delay;
  former = std::make_unique<internal::BatchFormer>(
      limits, options.device, model.config.type_vocab_size() > 1,
      [this](internal::FormedBatch b) { to_device.Push(std::move(b)); });
  worker = std::make_unique<internal::DeviceWorker>(
      model.model.get(), embedding.has_value() ? &*embedding : nullptr, options.device, options.amp,
      std::move(graphs), &to_device,
      [this](internal::ScoredBatch b) { to_complete.Push(std::move(b)); });
  completion = std::make_unique<internal::Completion>(
      model.config.num_labels(), embedding.has_value(), &to_complete,
      [this](const BatchStats& stats) { BatchFinished(stats); });
  internal::RequestEncoding encoding;
  encoding.max_len = options.max_len;
  encoding.long_text = options.long_text;
  encoding.window_stride = options.window_stride;
  // Embedding models are cut at the end, never windowed: sentence-transformers and TEI embed the
  // first max_len tokens.
  if (kind == ModelKind::kEmbedding) {
    encoding.long_text = LongText::kHeadTail;
    encoding.truncation = tokenize::Truncation::kHead;
  }
  tokenizers = std::make_unique<internal::TokenizerPool>(
      &model.tokenizer, encoding, &to_tokenize,
      [this](internal::TokenizedRequest r) { former->Add(std::move(r)); },
      options.tokenizer_threads);
}

void InferenceEngine::Impl::Stop() {
  to_tokenize.Close();
  tokenizers->Join();
  former->Close();
  former->Join();
  to_device.Close();
  worker->Join();
  to_complete.Close();
  completion->Join();
}

void InferenceEngine::Impl::BatchFinished(const BatchStats& stats) {
  counters->batches.fetch_add(1);
  if (stats.graphed) counters->graphed_batches.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(observer_mu);
    if (observer) observer(stats);
  }
  former->BatchDone();
}

InferenceEngine::InferenceEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

InferenceEngine::~InferenceEngine() { Shutdown(); }

absl::StatusOr<std::unique_ptr<InferenceEngine>> InferenceEngine::Load(const std::string& model_dir,
                                                                       EngineOptions options) {
  absl::StatusOr<model_files::SentenceTransformerSpec> spec =
      model_files::ReadSentenceTransformerDir(model_dir);
  if (spec.ok()) return LoadSentenceTransformer(*spec, std::move(options));
  if (!absl::IsNotFound(spec.status())) return spec.status();
  absl::StatusOr<model_files::LoadedModel> loaded =
      model_files::LoadModelDir(model_dir, options.device);
  if (!loaded.ok()) return loaded.status();
  // Refuses a checkpoint without a trained classification head (a plain encoder) unless it is to
  // be served as an embedding model.
  if (!options.pooling.has_value()) {
    if (absl::Status s = model_files::RequireTrainedHead(*loaded, model_dir); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(s.message(),
                       "; to serve its encoder as an embedding model, name a "
                       "pooling (--pooling mean, cls, ...)"));
    }
  }
  return Create(std::move(*loaded), std::move(options));
}

absl::StatusOr<std::unique_ptr<InferenceEngine>> InferenceEngine::LoadSentenceTransformer(
    const model_files::SentenceTransformerSpec& spec, EngineOptions options) {
  absl::StatusOr<model_files::LoadedModel> loaded =
      model_files::LoadModelDir(spec.transformer_dir, options.device);
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<internal::EmbeddingHead> head =
      internal::LoadEmbeddingHead(spec, loaded->config, options.pooling, options.device);
  if (!head.ok()) return head.status();
  // sentence-transformers cuts at the Transformer module's max_seq_length.
  if (spec.max_seq_length > 0) options.max_len = std::min(options.max_len, spec.max_seq_length);
  return Build(std::move(*loaded), std::move(options), ModelKind::kEmbedding, *std::move(head));
}

absl::StatusOr<std::unique_ptr<InferenceEngine>> InferenceEngine::Create(
    model_files::LoadedModel model, EngineOptions options) {
  if (options.pooling.has_value()) {
    internal::EmbeddingHead head = internal::PoolingOnlyHead(model.config, *options.pooling);
    return Build(std::move(model), std::move(options), ModelKind::kEmbedding, std::move(head));
  }
  const ModelKind kind =
      model.config.num_labels() == 1 ? ModelKind::kReranker : ModelKind::kClassifier;
  return Build(std::move(model), std::move(options), kind, std::nullopt);
}

absl::StatusOr<std::unique_ptr<InferenceEngine>> InferenceEngine::Build(
    model_files::LoadedModel model, EngineOptions options, ModelKind kind,
    std::optional<internal::EmbeddingHead> embedding) {
  if (absl::Status s = internal::ResolveEngineOptions(model.config, &options); !s.ok()) return s;
  ApplyAttention(options.attention, *model.model);
  try {
    model.model->to(options.device);
    model.model->eval();
    // The fused inference layers' weights in the compute dtype, cast once for every batch, and
    // under amp fp8 their GEMM weights quantized to FP8 too.
    if (options.int8_weights) {
      if (absl::Status s = model.model->PrepareInt8Inference(); !s.ok()) return s;
    } else if (!model.config.pre_ln()) {
      model.model->PrepareInference(internal::ComputeDtype(options.amp),
                                    /*fp8_weights=*/options.amp == models::AmpMode::kFp8);
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("inference engine: preparing the model: ", e.what_without_backtrace()));
  }
  std::unique_ptr<internal::GraphedForward> graphs;
  // The graphs capture the kind's forward: the classifier's scores, or the encoder with the
  // embedding head (requests for token vectors run eagerly).
  if (options.cuda_graph_max_tokens > 0) {
    internal::GraphedForward::Options g;
    g.max_tokens = options.cuda_graph_max_tokens;
    g.max_batch_tokens = options.max_batch_tokens;
    g.max_len = options.max_len;
    absl::StatusOr<std::unique_ptr<internal::GraphedForward>> captured =
        internal::GraphedForward::Capture(
            internal::DeviceWorker::CapturableForward(
                model.model.get(), embedding.has_value() ? &*embedding : nullptr,
                options.device.type(), options.amp),
            options.device, g);
    if (!captured.ok()) return captured.status();
    graphs = *std::move(captured);
  }
  // Before the engine's threads start: glibc keeps freed activations for the next forward, and
  // the loading thread's OpenMP pool goes (cpu_host_setup.h; together 25-30% of a 2-core CPU
  // forward).
  if (options.device.is_cpu()) internal::PrepareHostForCpuEngine();
  auto impl = std::make_unique<Impl>(std::move(model), options, kind, std::move(embedding));
  impl->Start(std::move(graphs));
  return std::unique_ptr<InferenceEngine>(new InferenceEngine(std::move(impl)));
}

absl::StatusOr<RequestHandle> InferenceEngine::Submit(absl::Span<const EngineRequest> requests) {
  const int64_t n = static_cast<int64_t>(requests.size());
  // Copied before the lock: admission itself stays short.
  auto state = std::make_shared<RequestHandle::State>(
      std::vector<EngineRequest>(requests.begin(), requests.end()), impl_->counters);
  internal::EngineCounters& counters = *impl_->counters;
  std::lock_guard<std::mutex> lock(impl_->admission_mu);
  if (impl_->stopping) return absl::UnavailableError("inference engine: shut down");
  // Only admissions raise `queued`, and they hold the lock: finishing requests can only make room.
  const int64_t queued = counters.queued.load();
  if (queued + n > impl_->options.max_queued_requests) {
    counters.rejected.fetch_add(n);
    return absl::ResourceExhaustedError(absl::StrCat("inference engine: queue full (", queued,
                                                     " of ", impl_->options.max_queued_requests,
                                                     " requests queued, ", n, " submitted)"));
  }
  counters.queued.fetch_add(n);
  counters.accepted.fetch_add(n);
  for (size_t i = 0; i < requests.size(); ++i) impl_->to_tokenize.Push({state, i});
  return RequestHandle(std::move(state));
}

absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> InferenceEngine::Run(
    absl::Span<const EngineRequest> requests) {
  absl::StatusOr<RequestHandle> handle = Submit(requests);
  if (!handle.ok()) return handle.status();
  return handle->Wait();
}

void InferenceEngine::Shutdown() {
  std::lock_guard<std::mutex> once(impl_->shutdown_mu);
  if (impl_->stopped) return;
  {
    std::lock_guard<std::mutex> lock(impl_->admission_mu);
    impl_->stopping = true;
  }
  impl_->Stop();
  impl_->stopped = true;
}

void InferenceEngine::SetBatchObserver(std::function<void(const BatchStats&)> observer) {
  std::lock_guard<std::mutex> lock(impl_->observer_mu);
  impl_->observer = std::move(observer);
}

EngineStats InferenceEngine::stats() const { return impl_->counters->Snapshot(); }
ModelKind InferenceEngine::kind() const { return impl_->kind; }
const EmbeddingInfo* InferenceEngine::embedding_info() const {
  return impl_->embedding.has_value() ? &impl_->embedding->info : nullptr;
}
const model_files::LoadedModel& InferenceEngine::model() const { return impl_->model; }
const EngineOptions& InferenceEngine::options() const { return impl_->options; }

}  // namespace padless::serve
