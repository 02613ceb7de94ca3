// padless_bench_e2e: trains the encoder classifier under every selected batching strategy,
// precision and checkpointing policy with one budget of token slots per step, runs the Python
// anchors in the same invocation, and writes RESULTS.md, a CSV and SVG plots. --smoke runs the
// whole pipeline on the CPU with the tiny preset (CI keeps the driver from rotting with it).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "anchors.h"
#include "bench_data.h"
#include "config_runner.h"
#include "padless/base/directory.h"
#include "padless/base/file_kind.h"
#include "padless/base/path_names.h"
#include "padless/base/read_file.h"
#include "report.h"
#include "run_config.h"

ABSL_FLAG(std::string, data, PADLESS_SOURCE_DIR "/../shared/data/imdb_train.tsv",
          "labeled TSV (label<TAB>text) to train the tokenizer on and to benchmark");
ABSL_FLAG(int64_t, max_rows, 0, "use only the first N rows of --data (0: all)");
ABSL_FLAG(std::string, cache_dir, PADLESS_BENCH_CACHE_DIR,
          "where the SentencePiece model and the tokenized corpus are cached");
ABSL_FLAG(std::string, out_dir, PADLESS_SOURCE_DIR "/bench/report",
          "CSV, SVG plots, token lengths and anchor logs go here");
ABSL_FLAG(std::string, results_md, PADLESS_SOURCE_DIR "/bench/RESULTS.md", "the generated report");
ABSL_FLAG(std::string, strategies, "all",
          "comma list of pad_to_max, pad_longest, hf_group_by_length, token_budget_buckets, "
          "packed_dense, packed_varlen (or all)");
ABSL_FLAG(std::string, precisions, "bf16",
          "comma list of fp32, bf16, fp8 (bf16 with the encoder's GEMMs in FP8; packed_varlen "
          "only, the layout whose fused layers run them)");
ABSL_FLAG(std::string, checkpoint, "none,all",
          "comma list of checkpoint policies: none, all, every:K, keep_last:K, selective, ffn, "
          "attn, ffn/every:K, ... (see models::CheckpointPolicy)");
ABSL_FLAG(std::string, fp32_strategies, "pad_to_max,packed_varlen",
          "strategies also run in fp32 without checkpointing (empty: none)");
ABSL_FLAG(std::string, generic_layers_checkpoint, "",
          "checkpoint policies for which packed_varlen/bf16 also runs with generic (per-op "
          "autograd) layers instead of the fused layer, as its baseline (empty: none)");
ABSL_FLAG(std::string, preset, "base", "encoder preset: tiny, small, base");
ABSL_FLAG(int, vocab, 16000, "SentencePiece unigram vocabulary size");
ABSL_FLAG(int64_t, max_len, 512, "tokens per sequence, special tokens included (head+tail cut)");
ABSL_FLAG(int64_t, budget, 16384, "token slots per step for every strategy");
ABSL_FLAG(int, warmup_steps, 10, "untimed steps per configuration");
ABSL_FLAG(int, steps, 50, "timed steps per configuration");
ABSL_FLAG(int, loader_workers, 2, "collating worker threads of the loader");
ABSL_FLAG(int, prefetch, 4, "batches the loader builds ahead");
ABSL_FLAG(int, threads, 0, "tokenizer threads (0: all cores)");
ABSL_FLAG(int, torch_threads, 0, "LibTorch intra-op CPU threads (0: LibTorch's default)");
ABSL_FLAG(double, clip_norm, 0.0,
          "gradient clipping by global norm in padless's step (0: none, as the Python anchors; "
          "padless train's default is 1.0)");
ABSL_FLAG(uint64_t, seed, 1234, "seed of the planner, the model and the anchors");
ABSL_FLAG(std::string, device, "auto", "auto (cuda when available), cpu, cuda or cuda:N");
ABSL_FLAG(bool, sdpa_cudnn, false,
          "let dense SDPA use cuDNN attention, which builds a new plan per batch shape (padless's "
          "default, ModelRuntime::dense_attention_cudnn, is false: flash or memory-efficient "
          "attention)");
ABSL_FLAG(std::string, varlen_attention, "auto",
          "attention backend of the packed_varlen configurations: auto (FA2 under bf16 on a GPU), "
          "flash, fa3 (FlashAttention-3 where built) or cudnn");
ABSL_FLAG(double, attention_dropout, -1,
          "the model's attention-probability dropout (negative: the preset's, 0.1 for BERT; the "
          "plain-PyTorch peer has none)");
ABSL_FLAG(bool, anchors, true, "run the Python anchors (GPU only)");
ABSL_FLAG(std::string, python, "python3", "interpreter for the anchors");
ABSL_FLAG(std::string, baselines_dir, PADLESS_SOURCE_DIR "/bench/baselines",
          "folder of hf_bert.py and torch_packed.py");
ABSL_FLAG(std::string, hf_strategies, "pad_to_max,pad_longest,group_by_length",
          "strategies of the Hugging Face anchor (empty: no Hugging Face anchor)");
ABSL_FLAG(std::string, trace_dir, "",
          "write a PyTorch profiler trace of --trace_steps steps run after each configuration's "
          "timed steps to DIR/<configuration>.json (summarise with bench/e2e/trace_summary.py)");
ABSL_FLAG(int, trace_steps, 3, "steps traced per configuration with --trace_dir (1 to 100)");
ABSL_FLAG(bool, trace_host, true,
          "with --trace_dir, record the host's operators too; --notrace_host records the GPU's "
          "work only, whose gaps then are those of an unprofiled step (CUDA builds only)");
ABSL_FLAG(bool, smoke, false,
          "CPU smoke run: tiny preset, 1 warmup + 2 steps, the first 200 rows of data/imdb_1k.tsv, "
          "max_len 64, budget 512, every strategy x fp32 x none/all plus three bf16 ones (one "
          "checkpointing ffn), no anchors; fails unless every configuration ran and every output "
          "file was written");

namespace padless::bench::e2e {
namespace {

constexpr int kExitSkip = 77;  // ctest's SKIP_RETURN_CODE

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string CommandLine(int argc, char** argv) {
  std::vector<std::string> parts;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain =
        a.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+") ==
        std::string::npos;
    parts.push_back(plain ? a : ShellQuote(a));
  }
  return absl::StrJoin(parts, " ");
}

std::string LengthSummary(const corpus::TokenizedCorpus& corpus) {
  std::vector<int64_t> lengths = corpus.Lengths();
  std::sort(lengths.begin(), lengths.end());
  auto pct = [&](double p) {
    const size_t i = std::min(lengths.size() - 1, static_cast<size_t>(p * (lengths.size() - 1)));
    return lengths[i];
  };
  const double mean = static_cast<double>(corpus.total_tokens()) / lengths.size();
  return absl::StrFormat("lengths mean %.0f, p50 %d, p90 %d, max %d", mean, pct(0.5), pct(0.9),
                         lengths.back());
}

absl::Status CheckOutputs(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    // The outputs are small (a table, plots, a report, one length per example): reading one whole
    // is the simplest check that it is there and not empty.
    const absl::StatusOr<std::string> bytes = base::ReadFile(p);
    if (!bytes.ok() || bytes->empty()) {
      return absl::InternalError(absl::StrCat("output missing or empty: ", p));
    }
  }
  return absl::OkStatus();
}

std::string RelativeTo(const std::string& path, const std::string& base_file) {
  const std::string base_dir = base::ParentDirectory(base::AbsolutePath(base_file));
  const std::string rel = base::RelativePath(base::AbsolutePath(path), base_dir);
  return rel.empty() ? path : rel;
}

// What the flags ask for, with --smoke's overrides applied.
struct Settings {
  bool smoke = false;
  std::string data_path;
  int64_t max_rows = 0;
  std::string strategies;
  std::string precisions;
  std::string checkpoints;
  std::string fp32_extra;
  std::string generic_layers;
  std::string device_name;
  bool anchors = true;
  int vocab = 0;
  int torch_threads = 0;
  RunOptions run;  // run.device is set by ResolveDevice
  std::string out_dir;
  std::string results_md;
};

// Everything small enough for 2 CPU cores in well under a minute, yet every code path.
void ApplySmoke(Settings& s) {
  s.data_path = PADLESS_SOURCE_DIR "/data/imdb_1k.tsv";
  s.max_rows = 200;
  s.vocab = 1000;
  s.run.preset = "tiny";
  s.run.max_len = 64;
  s.run.budget = 512;
  s.run.warmup_steps = 1;
  s.run.steps = 2;
  s.run.loader_workers = 1;
  // One thread: OpenMP workers spinning on a shared 2-core CI machine cost more than they give.
  s.torch_threads = 1;
  s.strategies = "all";
  s.precisions = "fp32";
  s.checkpoints = "none,all";
  s.fp32_extra = "";
  s.generic_layers = "";
  s.device_name = "cpu";
  s.anchors = false;
}

Settings ReadFlags() {
  Settings s;
  s.smoke = absl::GetFlag(FLAGS_smoke);
  s.data_path = absl::GetFlag(FLAGS_data);
  s.max_rows = absl::GetFlag(FLAGS_max_rows);
  s.strategies = absl::GetFlag(FLAGS_strategies);
  s.precisions = absl::GetFlag(FLAGS_precisions);
  s.checkpoints = absl::GetFlag(FLAGS_checkpoint);
  s.fp32_extra = absl::GetFlag(FLAGS_fp32_strategies);
  s.generic_layers = absl::GetFlag(FLAGS_generic_layers_checkpoint);
  s.device_name = absl::GetFlag(FLAGS_device);
  s.anchors = absl::GetFlag(FLAGS_anchors);
  s.run.preset = absl::GetFlag(FLAGS_preset);
  s.run.max_len = absl::GetFlag(FLAGS_max_len);
  s.run.budget = absl::GetFlag(FLAGS_budget);
  s.run.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  s.run.steps = absl::GetFlag(FLAGS_steps);
  s.run.loader_workers = absl::GetFlag(FLAGS_loader_workers);
  s.run.prefetch = absl::GetFlag(FLAGS_prefetch);
  s.run.seed = absl::GetFlag(FLAGS_seed);
  s.run.clip_norm = absl::GetFlag(FLAGS_clip_norm);
  s.run.sdpa_cudnn = absl::GetFlag(FLAGS_sdpa_cudnn);
  s.run.attention_dropout = absl::GetFlag(FLAGS_attention_dropout);
  s.run.trace_dir = absl::GetFlag(FLAGS_trace_dir);
  s.run.trace_steps = absl::GetFlag(FLAGS_trace_steps);
  s.run.trace_host = absl::GetFlag(FLAGS_trace_host);
  s.vocab = absl::GetFlag(FLAGS_vocab);
  s.torch_threads = absl::GetFlag(FLAGS_torch_threads);
  s.out_dir = absl::GetFlag(FLAGS_out_dir);
  s.results_md = absl::GetFlag(FLAGS_results_md);
  if (s.smoke) ApplySmoke(s);
  return s;
}

absl::StatusOr<std::vector<RunConfig>> Configs(const Settings& s) {
  absl::StatusOr<std::vector<RunConfig>> configs =
      ExpandConfigs(s.strategies, s.precisions, s.checkpoints, s.fp32_extra, s.generic_layers);
  if (configs.ok() && s.smoke) {
    // bf16 autocast is slow on CPUs without bf16 units: cover it (and checkpointing under
    // autocast, whole layers and the FFN block) with three configurations rather than twelve.
    configs->push_back(RunConfig{Strategy::kPackedVarlen, Precision::kBf16, "none"});
    configs->push_back(RunConfig{Strategy::kPadLongest, Precision::kBf16, "all"});
    configs->push_back(RunConfig{Strategy::kPackedVarlen, Precision::kBf16, "ffn"});
  }
  return configs;
}

// Sets s.run.device from --device; the anchors are dropped on a CPU device. The exit code when
// the device cannot be used.
std::optional<int> ResolveDevice(Settings& s) {
  if (s.device_name == "auto") s.device_name = CudaAvailable() ? "cuda:0" : "cpu";
  try {
    s.run.device = c10::Device(s.device_name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "--device: cannot parse '%s'\n", s.device_name.c_str());
    return 2;
  }
  if (s.run.device.is_cuda() && !CudaAvailable()) {
    std::fprintf(stderr, "--device %s: CUDA is not available in this process\n",
                 s.device_name.c_str());
    return 2;
  }
  if (!s.run.device.is_cuda() && s.anchors) {
    std::fprintf(stderr, "[e2e] CPU device: the Python anchors need a GPU; skipping them\n");
    s.anchors = false;
  }
  return std::nullopt;
}

// Checks the --trace_* flags and creates --trace_dir; the exit code when they cannot be used.
std::optional<int> PrepareTracing(const RunOptions& run) {
  if (run.trace_steps < 1 || run.trace_steps > 100) {
    std::fprintf(stderr, "--trace_steps must be between 1 and 100, got %d\n", run.trace_steps);
    return 2;
  }
  if (!run.trace_host && (run.trace_dir.empty() || !run.device.is_cuda())) {
    std::fprintf(stderr,
                 "--notrace_host traces the GPU's work only: it needs --trace_dir and a "
                 "CUDA device\n");
    return 2;
  }
  if (!run.trace_dir.empty()) {
    if (absl::Status made = base::MakeDirectories(run.trace_dir); !made.ok()) {
      std::fprintf(stderr, "cannot create --trace_dir %s: %s\n", run.trace_dir.c_str(),
                   std::string(made.message()).c_str());
      return 1;
    }
  }
  return std::nullopt;
}

// Creates --out_dir and the folder of --results_md; the exit code when --out_dir cannot be made.
std::optional<int> MakeOutputDirs(const Settings& s) {
  if (absl::Status made = base::MakeDirectories(s.out_dir); !made.ok()) {
    std::fprintf(stderr, "cannot create --out_dir %s: %s\n", s.out_dir.c_str(),
                 std::string(made.message()).c_str());
    return 1;
  }
  // A folder that cannot be made shows when RESULTS.md is written into it (WriteOutputs).
  base::MakeDirectories(base::ParentDirectory(s.results_md)).IgnoreError();
  return std::nullopt;
}

// Tokenizes the corpus (or loads it from the cache), sizes s.run to it and writes its lengths
// for the anchors to `lengths_path`. Errors are printed; nullopt then.
std::optional<BenchData> LoadData(Settings& s, const std::string& lengths_path) {
  DataOptions data_options;
  data_options.data_path = s.data_path;
  data_options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  data_options.vocab_size = s.vocab;
  data_options.max_len = s.run.max_len;
  data_options.max_rows = s.max_rows;
  data_options.threads = absl::GetFlag(FLAGS_threads);
  std::fprintf(stderr, "[e2e] preparing data from %s\n", s.data_path.c_str());
  absl::StatusOr<BenchData> data = PrepareData(data_options);
  if (!data.ok()) {
    std::fprintf(stderr, "data: %s\n", std::string(data.status().message()).c_str());
    return std::nullopt;
  }
  s.run.vocab_size = data->vocab_size;
  s.run.num_labels = data->num_labels;
  s.run.pad_id = data->pad_id;
  if (absl::Status st = WriteLengths(data->corpus, lengths_path); !st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return std::nullopt;
  }
  return *std::move(data);
}

// The report's facts about this invocation: command, date, device, versions, data and the
// matmul rate (measured here).
ReportInput StartReport(const Settings& s, const BenchData& data, int argc, char** argv) {
  const RunOptions& run = s.run;
  ReportInput report;
  report.smoke = s.smoke;
  report.command = CommandLine(argc, argv);
  report.date_utc = UtcNow();
  report.device = run.device.str();
  report.gpu_name = DeviceName(run.device);
  report.torch_version = TorchVersion();
  report.run_options = run;
  report.data_summary = absl::StrFormat(
      "%s (%s; %d examples used), SentencePiece unigram %d pieces (%s, %.1f s), head+tail "
      "truncation at %d (%s, %.1f s); %s",
      s.data_path, data.read_summary, data.corpus.size(), data.vocab_size,
      data.tokenizer_from_cache ? "cached" : "trained", data.tokenizer_seconds, run.max_len,
      data.corpus_from_cache ? "cached corpus" : "tokenized", data.encode_seconds,
      LengthSummary(data.corpus));
  std::fprintf(stderr, "[e2e] %s\n", report.data_summary.c_str());

  absl::StatusOr<double> matmul = MeasureMatmulTflops(run.device);
  if (matmul.ok()) {
    report.matmul_tflops = *matmul;
    std::fprintf(stderr, "[e2e] bf16 matmul 8192^3: %.0f TFLOP/s\n", *matmul);
  } else {
    report.matmul_note = std::string(matmul.status().message());
  }
  return report;
}

// Trains every configuration; results and failures go to `report`.
void RunConfigurations(const std::vector<RunConfig>& configs, const corpus::TokenizedCorpus& corpus,
                       const RunOptions& run, ReportInput& report) {
  for (const RunConfig& config : configs) {
    std::fprintf(stderr, "[e2e] running %s\n", config.Name().c_str());
    absl::StatusOr<RunResult> r = RunConfiguration(config, corpus, run);
    if (!r.ok()) {
      report.run_failures.push_back(std::string(r.status().message()));
      std::fprintf(stderr, "[e2e] FAILED %s\n", std::string(r.status().message()).c_str());
      continue;
    }
    std::fprintf(stderr,
                 "[e2e]   %s: %.1fk real tok/s, padding eff. %.1f%%, step %.1f ms, data wait "
                 "%.1f%%, host < 1 step ahead %.0f%%, peak %.2f GiB, activations %.2f GiB, loss "
                 "%.4f\n",
                 r->backend.c_str(), r->tokens_per_second() / 1e3, 100 * r->padding_efficiency(),
                 r->step_ms(), 100 * r->data_wait_share(), 100 * r->host_lead_under_a_step_share(),
                 r->peak_allocated_bytes / 1073741824.0, r->activation_bytes() / 1073741824.0,
                 r->mean_loss);
    report.runs.push_back(*std::move(r));
  }
}

// The anchors' options: the run's sizes and the checkpointing of the padless configurations.
AnchorOptions AnchorOptionsFor(const RunOptions& run, const std::vector<RunConfig>& configs,
                               const std::string& lengths_path, const std::string& out_dir) {
  AnchorOptions a;
  a.python = absl::GetFlag(FLAGS_python);
  a.baselines_dir = absl::GetFlag(FLAGS_baselines_dir);
  a.lengths_path = lengths_path;
  a.out_dir = out_dir;
  a.hf_strategies = absl::GetFlag(FLAGS_hf_strategies);
  a.budget = run.budget;
  a.max_len = run.max_len;
  a.vocab_size = run.vocab_size;
  a.warmup_steps = run.warmup_steps;
  a.steps = run.steps;
  a.seed = run.seed;
  a.checkpoint_policies.clear();
  for (const RunConfig& c : configs) {
    // The anchors know only per-layer checkpointing, the peer of every padless policy.
    if (std::find(a.checkpoint_policies.begin(), a.checkpoint_policies.end(), c.checkpointed()) ==
        a.checkpoint_policies.end()) {
      a.checkpoint_policies.push_back(c.checkpointed());
    }
  }
  return a;
}

// Runs the Python anchors into `report`; true when one of them failed.
bool RunPythonAnchors(const AnchorOptions& options, ReportInput& report) {
  bool anchor_failed = false;
  report.anchors = RunAnchors(options);
  for (const AnchorRun& ar : report.anchors) {
    if (!ar.error.empty()) {
      anchor_failed = true;
      std::fprintf(stderr, "[e2e] anchor FAILED: %s\n", ar.error.c_str());
    }
    for (const AnchorRow& row : ar.rows) {
      std::fprintf(stderr, "[e2e]   %s: %.1fk real tok/s\n", row.Name().c_str(),
                   row.real_tokens_per_s / 1e3);
      if (report.python_torch_version.empty()) report.python_torch_version = row.torch;
    }
  }
  return anchor_failed;
}

// Writes the CSV, the plots and RESULTS.md and checks that they and the lengths file are there;
// false (after printing why) when one is not.
bool WriteOutputs(const Settings& s, const std::string& lengths_path, ReportInput& report) {
  const std::string csv = absl::StrCat(s.out_dir, "/e2e_results.csv");
  const std::string throughput_svg = absl::StrCat(s.out_dir, "/e2e_throughput.svg");
  const std::string memory_svg = absl::StrCat(s.out_dir, "/e2e_memory_vs_throughput.svg");
  report.csv_link = RelativeTo(csv, s.results_md);
  report.throughput_svg_link = RelativeTo(throughput_svg, s.results_md);
  report.memory_svg_link = RelativeTo(memory_svg, s.results_md);
  for (const absl::Status& st :
       {WriteCsv(csv, report), WriteThroughputSvg(throughput_svg, report),
        WriteMemorySvg(memory_svg, report), WriteMarkdown(s.results_md, report)}) {
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      return false;
    }
  }
  if (absl::Status st = CheckOutputs({lengths_path, csv, throughput_svg, memory_svg, s.results_md});
      !st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return false;
  }
  std::fprintf(stderr, "[e2e] wrote %s, %s, %s, %s\n", s.results_md.c_str(), csv.c_str(),
               throughput_svg.c_str(), memory_svg.c_str());
  return true;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "End-to-end throughput/memory benchmark of padless against the Python anchors.\n"
      "GPU run: padless_bench_e2e  (defaults: every strategy in bf16 x {none, all} plus fp32 "
      "pad_to_max and packed_varlen).\nCI: padless_bench_e2e --smoke --out_dir D --results_md F");
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::fprintf(stderr, "unexpected argument: %s\n", rest[1]);
    return 2;
  }
  Settings s = ReadFlags();
  const absl::StatusOr<models::AttentionBackend> attention =
      models::ParseAttentionBackend(absl::GetFlag(FLAGS_varlen_attention));
  if (!attention.ok()) {
    std::fprintf(stderr, "--varlen_attention: %s\n",
                 std::string(attention.status().message()).c_str());
    return 2;
  }
  s.run.varlen_attention = *attention;
  if (base::KindOfPath(s.data_path) == base::FileKind::kMissing) {
    std::fprintf(stderr, "data file not found: %s\n", s.data_path.c_str());
    return s.smoke ? kExitSkip : 1;
  }
  const absl::StatusOr<std::vector<RunConfig>> configs = Configs(s);
  if (!configs.ok()) {
    std::fprintf(stderr, "%s\n", std::string(configs.status().message()).c_str());
    return 2;
  }
  SetTorchThreads(s.torch_threads);
  if (std::optional<int> exit_code = ResolveDevice(s)) return *exit_code;
  if (std::optional<int> exit_code = PrepareTracing(s.run)) return *exit_code;
  if (std::optional<int> exit_code = MakeOutputDirs(s)) return *exit_code;

  const std::string lengths_path = absl::StrCat(s.out_dir, "/imdb_lengths.txt");
  const std::optional<BenchData> data = LoadData(s, lengths_path);
  if (!data) return 1;
  ReportInput report = StartReport(s, *data, argc, argv);
  RunConfigurations(*configs, data->corpus, s.run, report);
  report.anchors_requested = s.anchors;
  const bool anchor_failed =
      s.anchors &&
      RunPythonAnchors(AnchorOptionsFor(s.run, *configs, lengths_path, s.out_dir), report);

  if (!WriteOutputs(s, lengths_path, report)) return 1;
  if (!report.run_failures.empty()) {
    std::fprintf(stderr, "[e2e] %zu configuration(s) failed\n", report.run_failures.size());
    return 1;
  }
  if (s.smoke && report.runs.size() != configs->size()) return 1;
  return anchor_failed ? 1 : 0;
}

}  // namespace
}  // namespace padless::bench::e2e

int main(int argc, char** argv) { return padless::bench::e2e::Main(argc, argv); }
