// InferenceEngine: a long-lived object that owns one loaded model and serves many callers at
// once: a classifier, a reranker (a cross-encoder) or an embedding model (ModelKind). It is the one
// implementation of inference in padless: TextClassifier (text_classifier.h), `padless predict` and
// `padless serve` are its clients.
//
// How a request travels:
//   Submit ─► admission (bounded queue: ResourceExhausted when full, never blocks)
//          ─► tokenizer pool (N threads: truncation or windows per request)
//          ─► batcher (FIFO, up to max_batch_tokens real tokens and max_batch_requests sequences,
//                      waiting at most max_batch_delay for a fuller batch while the device is busy)
//          ─► device worker (one varlen batch of real tokens only, pinned host buffers,
//                      asynchronous copies; the next batch is formed and copied while this one
//                      runs)
//          ─► completion (probabilities and raw scores copied back; each request's result is set)
// Results never depend on which requests share a batch (varlen: no padding, no cross-sequence
// attention), so a request gets the same answer alone as in any crowd, up to the dtype's rounding.
//
// Lifetimes: the engine owns its threads and the model. Shutdown() (also run by the destructor)
// stops admission, finishes every accepted request, and joins the threads. A RequestHandle may
// outlive the engine: its result is then already set.
#ifndef PADLESS_SERVE_INFERENCE_ENGINE_H_
#define PADLESS_SERVE_INFERENCE_ENGINE_H_

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "padless/model_files/model_io.h"
#include "padless/model_files/sentence_transformers.h"
#include "padless/models/attention.h"
#include "padless/models/autocast.h"
#include "padless/models/sentence_pooling.h"
#include "padless/tokenize/truncation.h"

namespace padless::serve {
namespace internal {
struct EmbeddingHead;
}  // namespace internal

// What happens to a text longer than the model's max_len.
enum class LongText {
  kHeadTail,  // keep the first and last tokens within max_len (the tokenizer's head+tail cut)
  kWindows,   // classify windows of max_len, each wrapped in [CLS] ... [SEP]; average them
};
absl::StatusOr<LongText> ParseLongText(const std::string& name);

// What a model directory is served as, TEI's three kinds. Picked at load from the directory
// (EngineOptions::pooling overrides it):
//   a sentence-transformers directory (modules.json)                     -> kEmbedding;
//   a trained classification head with one label (a cross-encoder)      -> kReranker;
//   a trained classification head with two or more labels               -> kClassifier;
//   no trained head (a plain encoder): FailedPrecondition, unless a pooling is given.
enum class ModelKind {
  kClassifier,  // per-label probabilities (softmax) and logits
  kReranker,    // one score per (query, text) pair: the sigmoid of the one logit, or the logit
  kEmbedding,   // one pooled vector per text (the sentence-transformers pipeline)
};
absl::string_view ModelKindName(ModelKind kind);  // "classifier", "reranker", "embedding"

struct EngineOptions {
  c10::Device device = c10::Device(c10::kCPU);
  // kOff: fp32; kBf16, kFp16 on a GPU; kFp8: bf16 with the encoder's GEMMs in FP8 (E4M3
  // weights with one scale per output channel, activations with one per token; post-LN models
  // only; emulated exactly, and slowly, off GPUs with FP8 tensor cores).
  models::AmpMode amp = models::AmpMode::kOff;
  // CPU only, with amp off: the encoder's GEMMs with int8 weights (models::Int8Linear: one scale
  // per output channel; activations quantized per batch, so results move slightly with the batch
  // a text shares; post-LN models only).
  bool int8_weights = false;
  int64_t max_len = 512;  // clamped to the model's max_positions
  LongText long_text = LongText::kHeadTail;
  int64_t window_stride = 128;  // tokens shared by consecutive windows (kWindows)
  // Batching across requests.
  // Real tokens per device batch (>= max_len). 0: by device, 16384 on a GPU and 2048 on the CPU,
  // where batches whose activations stay in the caches are faster (on a 2-core machine, MiniLM
  // shape: 255 against 195 texts/s on SST-2 at 2048 against 8192 tokens, 17.3 against 14.4 on
  // IMDB at 2048 against 16384; bench/serve/README.md).
  int64_t max_batch_tokens = 0;
  int64_t max_batch_requests = 512;              // sequences per device batch
  std::chrono::microseconds max_batch_delay{0};  // wait for a fuller batch at most this long
  // Admission: requests (a batch submission counts each of its texts) accepted but not finished.
  int64_t max_queued_requests = 4096;
  int tokenizer_threads = 0;  // 0: hardware concurrency, at most 8
  // CUDA graphs for small batches: batches of fewer real tokens than this (single texts, not
  // pairs) replay a forward captured at load, one graph per bucket of 128, 256, ... tokens,
  // instead of launching ~2 ms of kernels for a few texts (graphed_forward.h). 0: off. Used
  // with amp bf16, fp16 or fp8 on a GPU, for post-LN models; ignored otherwise.
  int64_t cuda_graph_max_tokens = 4096;
  // The attention kernels of every batch, the CUDA graphs' included (set on the model's runtime
  // before they are captured). kAuto: the model's runtime as loaded or as Create's caller set it,
  // which picks per batch (on a GPU in bf16, fp16 or fp8: FA3 where it runs and the sequences
  // average at least kFa3MinMeanTokens, FA2 otherwise; length groups on the CPU). flash,
  // efficient, cudnn and fa3 run on CUDA only, and cudnn needs a build with it (both refused
  // with InvalidArgument at Load/Create); fa3 runs FA2 for the calls FA3 cannot
  // (models/fa3_attention.h). dense, grouped and reference read each batch's offsets on the
  // host, so they run without CUDA graphs.
  models::AttentionBackend attention = models::AttentionBackend::kAuto;
  // Serve the directory as an embedding model with this pooling, whatever its head (TEI's
  // --pooling); for a sentence-transformers directory it replaces 1_Pooling's mode. Unset: the
  // kind and the pooling follow the directory (ModelKind).
  std::optional<models::SentencePooling> pooling;
};

// An embedding engine's pipeline after the encoder, as loaded (sentence-transformers' modules).
struct EmbeddingInfo {
  models::SentencePooling pooling = models::SentencePooling::kCls;
  int64_t hidden_size = 0;  // the encoder's width: the token vectors' (/embed_all)
  int64_t dimension = 0;    // the width of EngineResult::embedding (after the Dense modules)
  bool normalize = false;   // the pipeline ends with a Normalize module
  std::map<std::string, std::string> prompts;  // config_sentence_transformers.json's
  std::string default_prompt_name;             // "" when none
};

// One text, or a pair, to classify.
struct EngineRequest {
  std::string text;
  std::optional<std::string> pair;
  // false: an input longer than max_len fails with InvalidArgument instead of being cut. Under
  // LongText::kWindows a single text is never cut (its windows cover it), so only pairs can fail.
  bool truncate = true;
  // Which end of a single text too long for max_len is cut. Unset: the engine's default, the
  // head+tail cut for classifiers and the end (kHead: keep the first tokens) for embedding
  // models, as sentence-transformers and TEI cut. Pairs are cut longest-first. Embedding engines
  // never use windows.
  std::optional<tokenize::Truncation> truncation;
  // Embedding engines: also return the last layer's vector of every token (TEI's /embed_all).
  bool token_embeddings = false;
  // Not empty: the model input as these token ids (TEI's and OpenAI's token-id inputs), used as
  // they are, no special tokens added; `text` and `pair` are then ignored. Cut like a text when
  // longer than max_len; an id outside the vocabulary fails the request with InvalidArgument.
  std::vector<int32_t> ids;
};

struct EngineResult {
  // Classifiers and rerankers, per label id (averaged over windows):
  std::vector<float> probabilities;  // softmax; a one-label head's (a reranker's) is its sigmoid
  std::vector<float> scores;         // raw logits
  int64_t label_id = 0;              // argmax
  // Embedding engines: the text's vector, pooled on the device and through the Dense modules, in
  // fp32, neither truncated nor normalized (per request: FinishEmbedding).
  std::vector<float> embedding;
  // With EngineRequest::token_embeddings: [tokens, hidden_size] row-major, every model input
  // token's last-layer vector, special tokens included.
  std::vector<float> token_embeddings;
  int64_t tokens = 0;  // model input tokens, special tokens and windows included
};

// An embedding as a request asks for it (TEI's `dimensions` and `normalize`): the first
// `dimensions` values (0: all; InvalidArgument above the vector's width), then scaled to unit L2
// norm when `normalize` (a zero vector stays zero), as models::FinishEmbeddings does on tensors.
absl::Status FinishEmbedding(std::vector<float>& embedding, bool normalize, int64_t dimensions);

// Per device batch, for metrics (the server's histograms) and tests.
struct BatchStats {
  int64_t sequences = 0;
  int64_t tokens = 0;
  std::chrono::nanoseconds device_time{0};  // from the batch's launch until its results are back
  bool graphed = false;                     // replayed a CUDA graph
};

struct EngineStats {
  int64_t queued = 0;     // accepted, not yet finished
  int64_t accepted = 0;   // since start
  int64_t rejected = 0;   // ResourceExhausted
  int64_t completed = 0;  // finished with a result or an error (cancelled ones included)
  int64_t cancelled = 0;
  int64_t batches = 0;
  int64_t graphed_batches = 0;  // of `batches`, those that replayed a CUDA graph
};

// The caller's side of a submission. Thread-compatible (one owner). Destroying it before the
// result is set cancels the request: work not yet on the device is skipped.
class RequestHandle {
 public:
  RequestHandle();
  RequestHandle(RequestHandle&&) noexcept;
  RequestHandle& operator=(RequestHandle&&) noexcept;
  ~RequestHandle();

  // Blocks until every result is set; one per submitted request, in order. Call once (a second
  // call gets FailedPrecondition results). A default-constructed handle returns no results.
  std::vector<absl::StatusOr<EngineResult>> Wait();
  // Waits at most `timeout`; false when the results are not all set yet.
  bool WaitFor(std::chrono::nanoseconds timeout);
  // Drops the work that has not reached the device; its results become Cancelled at once.
  // Requests already in a device batch finish normally.
  void Cancel();
  // Calls `done` once, when every result is set (at once, on this thread, when they already
  // are): on the thread that sets the last one, usually the engine's completion thread, so it
  // must be quick (hand the work on, e.g. to an I/O thread, which then calls Wait() without
  // blocking). Call it at most once, before Wait(). For servers that must not block a thread per
  // request.
  void OnDone(std::function<void()> done);

  struct State;  // shared with the engine

 private:
  friend class InferenceEngine;
  explicit RequestHandle(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

class InferenceEngine {
 public:
  // Loads a model directory (model_files/model_io.h, or a sentence-transformers directory) onto
  // options.device, as the kind ModelKind describes. FailedPrecondition, naming the missing
  // weights, when it has no trained classification head and no pooling (neither modules.json nor
  // options.pooling): a plain Hugging Face encoder is never served as a classifier.
  static absl::StatusOr<std::unique_ptr<InferenceEngine>> Load(const std::string& model_dir,
                                                               EngineOptions options = {});
  // A CPU engine (Load or Create) also sets two process-wide things, once: glibc's malloc keeps
  // freed blocks up to 256 MiB for reuse (the process stays at its high-water mark), and the
  // calling thread's OpenMP threads are released (serve/cpu_host_setup.h says why).
  // Serves an already loaded model (moved in) as it is: an embedding model with
  // options.pooling, else a reranker (one label) or a classifier. A caller that loads with
  // model_files::LoadModelDir checks the head itself (model_files::RequireTrainedHead).
  static absl::StatusOr<std::unique_ptr<InferenceEngine>> Create(model_files::LoadedModel model,
                                                                 EngineOptions options = {});
  ~InferenceEngine();  // Shutdown()

  // Thread-safe. All requests are admitted together or none: ResourceExhausted when the queue has
  // no room for them, Unavailable after Shutdown(). An admitted request always gets a result.
  absl::StatusOr<RequestHandle> Submit(absl::Span<const EngineRequest> requests);
  // Submit and Wait in one call.
  absl::StatusOr<std::vector<absl::StatusOr<EngineResult>>> Run(
      absl::Span<const EngineRequest> requests);

  // Stops admission, finishes what was accepted, joins the threads. Idempotent.
  void Shutdown();

  // Called on the completion thread after each device batch, once its requests' results are set;
  // must be quick and thread-safe (while it runs, that batch still counts as in flight).
  void SetBatchObserver(std::function<void(const BatchStats&)> observer);

  EngineStats stats() const;
  ModelKind kind() const;
  // The embedding pipeline; null unless kind() is kEmbedding.
  const EmbeddingInfo* embedding_info() const;
  const model_files::LoadedModel& model() const;
  const EngineOptions& options() const;  // as clamped by Load/Create

 private:
  struct Impl;
  explicit InferenceEngine(std::unique_ptr<Impl> impl);
  static absl::StatusOr<std::unique_ptr<InferenceEngine>> LoadSentenceTransformer(
      const model_files::SentenceTransformerSpec& spec, EngineOptions options);
  // Prepares the model for inference and starts the stages.
  static absl::StatusOr<std::unique_ptr<InferenceEngine>> Build(
      model_files::LoadedModel model, EngineOptions options, ModelKind kind,
      std::optional<internal::EmbeddingHead> embedding);
  std::unique_ptr<Impl> impl_;
};

}  // namespace padless::serve

#endif  // PADLESS_SERVE_INFERENCE_ENGINE_H_
