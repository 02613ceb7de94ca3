// `padless serve --model DIR`: an HTTP/1.1 server with the predict API of Hugging Face
// text-embeddings-inference over a trained model directory. The server is serve/http
// (HttpServer over serve::InferenceEngine); this file maps flags onto them, prints the startup
// line, and turns SIGTERM/SIGINT into a drain that exits 0.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "attention_flag.h"
#include "cli_util.h"
#include "common_flags.h"
#include "data_flags.h"
#include "device_flag.h"
#include "flag_spelling.h"
#include "model_dir_flag.h"
#include "padless/base/path_names.h"
#include "padless/model_files/sentence_transformers.h"
#include "padless/serve/http/http_server.h"
#include "padless/serve/http/server_info.h"
#include "padless/serve/http/server_log.h"
#include "padless/serve/http/shutdown_signals.h"
#include "padless/serve/inference_engine.h"
#include "path_checks.h"
#include "subcommand.h"

ABSL_FLAG(int, port, 8080, "serve: TCP port (0: a free port, printed in the startup line)");
ABSL_FLAG(std::string, host, "127.0.0.1", "serve: address to listen on (0.0.0.0: every interface)");
ABSL_FLAG(int64_t, max_batch_tokens, 0,
          "serve: real tokens per device batch, across requests (at least --max-len; 0: 16384 on "
          "a GPU, 2048 on the CPU)");
ABSL_FLAG(int64_t, max_batch_requests, 512, "serve: sequences per device batch");
ABSL_FLAG(int64_t, max_concurrent_requests, 512,
          "serve: inputs accepted and not yet answered; beyond it requests get 429");
ABSL_FLAG(int64_t, max_client_batch_size, 32, "serve: inputs in one request; beyond it 413");
ABSL_FLAG(int64_t, max_batch_delay_us, 0,
          "serve: while the device is busy, wait at most this long for a fuller batch");
ABSL_FLAG(int, tokenizer_threads, 0, "serve: tokenizer threads (0: the cores, at most 8)");
ABSL_FLAG(std::string, log_level, "info",
          "serve: error, warn, info (a line per request) or debug (also why a request failed)");
ABSL_FLAG(int64_t, body_limit, 2000000, "serve: largest request body in bytes; beyond it 413");
ABSL_FLAG(int64_t, cuda_graph_max_tokens, 4096,
          "serve: batches of fewer tokens replay CUDA graphs captured at load (bf16, fp16, fp8 "
          "on a GPU; 0: off)");
ABSL_FLAG(int, io_threads, 2,
          "serve: threads of the HTTP event loop (parsing, routing, writing answers); a "
          "connection costs memory, not a thread");
ABSL_FLAG(int, max_connections, 32768,
          "serve: connections open at once; a new one beyond it is answered 503 and closed");

namespace padless::cli {
namespace {

namespace http = padless::serve::http;
constexpr const char* kServeCmd = "serve";

// "--port must be >= 1, got 0" with the flag as the user wrote it.
absl::Status CheckAtLeast(absl::string_view flag, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return UsageError(absl::StrCat(FlagAsWritten(flag), " must be >= ", min, ", got ", value));
}

absl::Status CheckServeRanges() {
  const int port = absl::GetFlag(FLAGS_port);
  if (port < 0 || port > 65535) {
    return UsageError(absl::StrCat(FlagAsWritten("port"), " must be in [0, 65535], got ", port));
  }
  if (absl::GetFlag(FLAGS_host).empty()) {
    return UsageError(absl::StrCat(FlagAsWritten("host"), " must not be empty"));
  }
  for (auto [flag, value, min] :
       {std::make_tuple("max_batch_requests", absl::GetFlag(FLAGS_max_batch_requests), 1),
        std::make_tuple("max_concurrent_requests", absl::GetFlag(FLAGS_max_concurrent_requests), 1),
        std::make_tuple("max_client_batch_size", absl::GetFlag(FLAGS_max_client_batch_size), 1),
        std::make_tuple("max_batch_delay_us", absl::GetFlag(FLAGS_max_batch_delay_us), 0),
        std::make_tuple("cuda_graph_max_tokens", absl::GetFlag(FLAGS_cuda_graph_max_tokens), 0),
        std::make_tuple("body_limit", absl::GetFlag(FLAGS_body_limit), 1),
        std::make_tuple("tokenizer_threads", int64_t{absl::GetFlag(FLAGS_tokenizer_threads)}, 0),
        std::make_tuple("io_threads", int64_t{absl::GetFlag(FLAGS_io_threads)}, 1),
        std::make_tuple("max_connections", int64_t{absl::GetFlag(FLAGS_max_connections)}, 1)}) {
    if (absl::Status s = CheckAtLeast(flag, value, min); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The limits that depend on each other, after each is in range.
absl::Status CheckServeRelations() {
  const int64_t max_len = absl::GetFlag(FLAGS_max_len);
  const int64_t batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  if (batch_tokens != 0 && batch_tokens < max_len) {  // 0: by device, resolved by the engine
    return UsageError(absl::StrCat(FlagAsWritten("max_batch_tokens"),
                                   " must be >= ", FlagAsWritten("max_len"), " (", max_len,
                                   "), got ", batch_tokens));
  }
  if (absl::GetFlag(FLAGS_max_client_batch_size) > absl::GetFlag(FLAGS_max_concurrent_requests)) {
    return UsageError(absl::StrCat(
        FlagAsWritten("max_client_batch_size"), " (", absl::GetFlag(FLAGS_max_client_batch_size),
        ") must be <= ", FlagAsWritten("max_concurrent_requests"), " (",
        absl::GetFlag(FLAGS_max_concurrent_requests), "): a larger batch could never be admitted"));
  }
  if (absl::GetFlag(FLAGS_io_threads) > 256) {
    return UsageError(absl::StrCat(FlagAsWritten("io_threads"), " must be <= 256, got ",
                                   absl::GetFlag(FLAGS_io_threads)));
  }
  return absl::OkStatus();
}

// Every flag of `serve`, as usage errors (exit 2), before anything touches the disk.
absl::StatusOr<serve::EngineOptions> EngineOptionsFromFlags() {
  if (absl::Status s = CheckSizeFlags(kMaxLen); !s.ok()) return s;
  if (absl::Status s = CheckServeRanges(); !s.ok()) return s;
  if (absl::Status s = CheckServeRelations(); !s.ok()) return s;
  absl::StatusOr<http::LogLevel> level = http::ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.ok())
    return UsageError(absl::StrCat(FlagAsWritten("log_level"), ": ", level.status().message()));
  absl::StatusOr<c10::Device> device = DeviceFlag();
  if (!device.ok()) return UsageError(device.status().message());
  absl::StatusOr<InferencePrecision> precision = InferencePrecisionFlag();
  if (!precision.ok()) return UsageError(precision.status().message());
  absl::StatusOr<models::AttentionBackend> attention = AttentionFlag();
  if (!attention.ok()) return attention.status();
  serve::EngineOptions options;
  options.device = *device;
  options.amp = precision->amp;
  options.int8_weights = precision->int8_weights;
  options.attention = *attention;
  options.max_len = absl::GetFlag(FLAGS_max_len);
  options.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  options.max_batch_requests = absl::GetFlag(FLAGS_max_batch_requests);
  options.max_batch_delay = std::chrono::microseconds(absl::GetFlag(FLAGS_max_batch_delay_us));
  options.max_queued_requests = absl::GetFlag(FLAGS_max_concurrent_requests);
  options.tokenizer_threads = absl::GetFlag(FLAGS_tokenizer_threads);
  options.cuda_graph_max_tokens = absl::GetFlag(FLAGS_cuda_graph_max_tokens);
  if (const std::string pooling = absl::GetFlag(FLAGS_pooling); !pooling.empty()) {
    absl::StatusOr<model_files::PoolingMode> mode = model_files::ParsePoolingMode(pooling);
    if (!mode.ok()) {
      return UsageError(absl::StrCat(FlagAsWritten("pooling"), ": ", mode.status().message()));
    }
    options.pooling = *mode;
  }
  return options;
}

http::ServerOptions ServerOptionsFromFlags() {
  http::ServerOptions options;
  options.host = absl::GetFlag(FLAGS_host);
  options.port = absl::GetFlag(FLAGS_port);
  options.body_limit = static_cast<size_t>(absl::GetFlag(FLAGS_body_limit));
  options.max_client_batch_size = static_cast<size_t>(absl::GetFlag(FLAGS_max_client_batch_size));
  options.io_threads = absl::GetFlag(FLAGS_io_threads);
  options.max_connections = absl::GetFlag(FLAGS_max_connections);
  return options;
}

// TEI's model_dtype: the weights' format as the GEMMs read them.
std::string DtypeName(const serve::EngineOptions& o) {
  if (o.int8_weights) return "int8";
  switch (o.amp) {
    case models::AmpMode::kBf16:
      return "bfloat16";
    case models::AmpMode::kFp16:
      return "float16";
    case models::AmpMode::kFp8:
      return "float8_e4m3";
    default:
      return "float32";
  }
}

// The startup line's precision: --amp as given.
std::string PrecisionName(const serve::EngineOptions& o) {
  return o.int8_weights ? "int8" : models::AmpModeName(o.amp);
}

// /info, from the engine's options as Load clamped them.
http::ServerInfo InfoOf(const serve::InferenceEngine& engine, const std::string& model_dir) {
  const serve::EngineOptions& o = engine.options();
  http::ServerInfo info;
  info.model_id = model_dir;
  info.model_dtype = DtypeName(o);
  info.device = o.device.str();
  info.kind = std::string(serve::ModelKindName(engine.kind()));
  if (const serve::EmbeddingInfo* e = engine.embedding_info()) {
    info.pooling = std::string(model_files::PoolingModeName(e->pooling));
  } else {
    info.labels = engine.model().labels.names();
  }
  info.max_concurrent_requests = o.max_queued_requests;
  info.max_input_length = o.max_len;
  info.max_batch_tokens = o.max_batch_tokens;
  info.max_batch_requests = o.max_batch_requests;
  info.max_client_batch_size = absl::GetFlag(FLAGS_max_client_batch_size);
  info.auto_truncate = true;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  info.tokenization_workers = o.tokenizer_threads > 0 ? o.tokenizer_threads : std::min(cores, 8);
  info.version = PADLESS_VERSION;
  return info;
}

// The one line that says the server is up (always printed: the port may have been chosen here).
void PrintStartupLine(const http::ServerInfo& info, const std::string& host, int port,
                      const serve::EngineOptions& o) {
  absl::FPrintF(stderr,
                "padless serve: ready on http://%s:%d model=%s kind=%s device=%s precision=%s "
                "attention=%s labels=%d max_input_length=%d max_batch_tokens=%d "
                "max_batch_requests=%d max_batch_delay_us=%d max_concurrent_requests=%d "
                "max_client_batch_size=%d tokenizer_threads=%d cuda_graph_max_tokens=%d "
                "io_threads=%d max_connections=%d body_limit=%d\n",
                host, port, info.model_id, info.kind, info.device, PrecisionName(o),
                models::AttentionBackendName(o.attention), info.labels.size(),
                info.max_input_length, info.max_batch_tokens, info.max_batch_requests,
                o.max_batch_delay.count(), info.max_concurrent_requests,
                info.max_client_batch_size, info.tokenization_workers, o.cuda_graph_max_tokens,
                absl::GetFlag(FLAGS_io_threads), absl::GetFlag(FLAGS_max_connections),
                absl::GetFlag(FLAGS_body_limit));
}

// Every connection holds a descriptor: the soft limit (often 1024) would cap --max-connections
// long before memory does, so it is raised to the hard limit, as servers do.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Listening (503 while the model loads), loading, serving until a signal, draining.
int Serve(const std::string& model_dir, const serve::EngineOptions& engine_options,
          http::ServerLog* log) {
  http::IgnoreBrokenPipe();
  RaiseOpenFileLimit();
  if (absl::Status s = http::BlockShutdownSignals(); !s.ok()) return Fail(kServeCmd, s);
  http::ServerOptions server_options = ServerOptionsFromFlags();
  server_options.model_name = base::PathStem(model_dir);
  http::HttpServer server(server_options, log);
  absl::StatusOr<int> port = server.Bind();
  if (!port.ok()) return Fail(kServeCmd, port.status());
  if (absl::Status s = server.Start(); !s.ok()) return Fail(kServeCmd, s);
  const std::string host = absl::GetFlag(FLAGS_host);
  log->Write(http::LogLevel::kInfo,
             absl::StrCat("listening on http://", host, ":", *port, "; loading ", model_dir));
  absl::StatusOr<std::unique_ptr<serve::InferenceEngine>> engine =
      serve::InferenceEngine::Load(model_dir, engine_options);
  if (!engine.ok()) return Fail(kServeCmd, engine.status());
  http::ServerInfo info = InfoOf(**engine, model_dir);
  PrintStartupLine(info, host, *port, (*engine)->options());
  server.SetEngine(std::move(*engine), std::move(info));
  const int signal = http::WaitForShutdownSignal();
  log->Write(http::LogLevel::kInfo,
             absl::StrCat("signal ", signal, ": draining (finishing the accepted requests)"));
  server.Drain();
  log->Write(http::LogLevel::kInfo, "drained; exiting");
  return kExitOk;
}

int RunServe(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(kServeCmd, absl::StrCat("unexpected argument '", args[0], "'"));
  const std::string model_dir = absl::GetFlag(FLAGS_model);
  if (model_dir.empty())
    return Usage(kServeCmd, absl::StrCat(FlagAsWritten("model"), " DIR is required"));
  absl::StatusOr<serve::EngineOptions> options = EngineOptionsFromFlags();
  if (!options.ok()) return ReportError(kServeCmd, options.status());
  if (absl::Status s = CheckPathFlag(ServableModelDirFlag(model_dir)); !s.ok()) {
    return Fail(kServeCmd, s);
  }
  http::ServerLog log(*http::ParseLogLevel(absl::GetFlag(FLAGS_log_level)));
  return Serve(model_dir, *options, &log);
}

}  // namespace

const Subcommand kServeCommand = {
    "serve",
    "serve a model over HTTP: classify, rerank or embed (TEI's and OpenAI's APIs)",
    "usage: padless serve --model DIR [--port 8080] [--host 127.0.0.1] [--pooling mean] "
    "[--flags]\n\n"
    "An HTTP/1.1 server (keep-alive, an event loop: a connection costs memory, not a thread)\n"
    "with the API of Hugging Face text-embeddings-inference, so that its clients work\n"
    "unchanged. The model directory decides what it serves: a sentence-transformers directory\n"
    "(modules.json) embeds, a trained head with one label reranks, one with more classifies;\n"
    "--pooling embeds with any directory's encoder.\n"
    "  POST /predict  {\"inputs\": \"text\" | [\"text\", \"pair\"] | [[\"a\"], [\"b\", \"c\"]],\n"
    "                  \"raw_scores\": false, \"truncate\": true} -> [{\"score\": 0.93, \"label\": "
    "\"pos\"}, ...]\n"
    "  POST /rerank   {\"query\": \"q\", \"texts\": [\"a\", \"b\"], \"raw_scores\": false, "
    "\"return_text\": false}\n"
    "                 -> [{\"index\": 1, \"score\": 0.98}, ...] (highest first)\n"
    "  POST /embed    {\"inputs\": \"text\" | [\"a\", \"b\"], \"normalize\": true, "
    "\"dimensions\": null,\n"
    "                  \"prompt_name\": null, \"truncation_direction\": \"Right\"} -> [[0.1, ...], "
    "...]\n"
    "  POST /embed_all (a vector per token), POST /similarity, POST /v1/embeddings (OpenAI's,\n"
    "  also /embeddings: float or base64, dimensions, usage), POST / (what the model does)\n"
    "  GET /health (200 serving, 503 loading or draining), GET /info, GET /metrics (Prometheus),\n"
    "  GET /openapi.json\n"
    "Errors are {\"error\": ..., \"error_type\": ...}: 415 Content-Type not JSON, 400 not JSON\n"
    "or a route the model does not serve, 422 wrong shape or an empty text, 413 over a limit,\n"
    "429 queue full, 503 loading, draining or over --max-connections, 408 a request slower\n"
    "than its deadline. SIGTERM or SIGINT drains: new requests get 503, accepted ones finish,\n"
    "then the server exits 0. The startup line on stderr says the address (the chosen port\n"
    "with --port 0), model, kind, device, precision, attention backend and limits.",
    {"model", "port", "host", "max_batch_tokens", "max_batch_requests", "max_concurrent_requests",
     "max_client_batch_size", "max_batch_delay_us", "device", "amp", "max_len", "tokenizer_threads",
     "log_level", "body_limit", "io_threads", "max_connections", "cuda_graph_max_tokens",
     "pooling", "attention"},
    RunServe};

}  // namespace padless::cli
