#include "anchors.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "padless/base/directory.h"
#include "padless/base/read_file.h"

namespace padless::bench::e2e {
namespace {

// A missing file reads as empty: a failed script is reported by its exit code and its log, and a
// missing result file as "the script wrote no result line".
std::string ReadFileOrEmpty(const std::string& path) {
  return base::ReadFile(path).value_or(std::string());
}

std::string Tail(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

AnchorRun RunScript(const AnchorOptions& o, const std::string& script, const std::string& tag,
                    const std::vector<std::string>& extra_args) {
  AnchorRun run;
  const std::string json_path = absl::StrCat(o.out_dir, "/anchor_", tag, ".jsonl");
  run.log_path = absl::StrCat(o.out_dir, "/anchor_", tag, ".log");
  base::RemoveFile(json_path);  // the scripts append
  std::vector<std::string> args = {o.python,    absl::StrCat(o.baselines_dir, "/", script),
                                   "--lengths", o.lengths_path,
                                   "--json",    json_path,
                                   "--budget",  absl::StrCat(o.budget),
                                   "--max-len", absl::StrCat(o.max_len),
                                   "--vocab",   absl::StrCat(o.vocab_size),
                                   "--warmup",  absl::StrCat(o.warmup_steps),
                                   "--steps",   absl::StrCat(o.steps),
                                   "--seed",    absl::StrCat(o.seed)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<std::string> quoted;
  for (const std::string& a : args) quoted.push_back(ShellQuote(a));
  run.command = absl::StrJoin(quoted, " ");
  std::fprintf(stderr, "[e2e] anchor: %s\n", run.command.c_str());
  const int status =
      std::system(absl::StrCat(run.command, " > ", ShellQuote(run.log_path), " 2>&1").c_str());
  run.exit_code =
      status == -1 ? -1 : (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  if (run.exit_code != 0) {
    run.error = absl::StrCat(script, " exited with ", run.exit_code, "; log tail:\n",
                             Tail(ReadFileOrEmpty(run.log_path), 1500));
    return run;
  }
  absl::StatusOr<std::vector<AnchorRow>> rows =
      ParseAnchorJsonLines(ReadFileOrEmpty(json_path), json_path);
  if (!rows.ok()) {
    run.error = std::string(rows.status().message());
  } else if (rows->empty()) {
    run.error = absl::StrCat(json_path, ": the script wrote no result line");
  } else {
    run.rows = *std::move(rows);
  }
  return run;
}

}  // namespace

std::string AnchorRow::Name() const {
  return absl::StrCat(impl, ":", strategy, "/ckpt_", checkpoint ? "all" : "none");
}

absl::StatusOr<std::vector<AnchorRow>> ParseAnchorJsonLines(absl::string_view text,
                                                            const std::string& source) {
  std::vector<AnchorRow> rows;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
    const std::string where = absl::StrCat(source, ":", line_no);
    nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                             /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object"));
    }
    AnchorRow r;
    try {
      r.impl = j.at("impl").get<std::string>();
      r.strategy = j.at("strategy").get<std::string>();
      r.checkpoint = j.at("checkpoint").get<bool>();
      r.real_tokens_per_s = j.at("real_tokens_per_s").get<double>();
      r.padding_efficiency = j.at("padding_efficiency").get<double>();
      r.step_ms = j.at("step_ms").get<double>();
      r.tflops = j.at("tflops").get<double>();
      r.matmul_tflops = j.at("matmul_tflops").get<double>();
      r.mfu = j.at("mfu").get<double>();
      r.peak_allocated_bytes = j.at("peak_allocated_bytes").get<int64_t>();
      r.peak_reserved_bytes = j.at("peak_reserved_bytes").get<int64_t>();
      r.static_bytes = j.value("static_bytes", int64_t{0});
      r.torch = j.value("torch", std::string());
      r.gpu = j.value("gpu", std::string());
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
    }
    if (!(r.real_tokens_per_s > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": field real_tokens_per_s must be positive"));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<AnchorRun> RunAnchors(const AnchorOptions& o) {
  std::vector<AnchorRun> runs;
  for (bool checkpoint : o.checkpoint_policies) {
    std::vector<std::string> extra;
    if (checkpoint) extra.push_back("--checkpoint");
    const std::string suffix = checkpoint ? "_ckpt" : "";
    // An empty list: no Hugging Face anchor (the plain-PyTorch peer alone).
    if (!o.hf_strategies.empty()) {
      std::vector<std::string> hf_extra = extra;
      hf_extra.push_back("--strategies");
      hf_extra.push_back(o.hf_strategies);
      runs.push_back(RunScript(o, "hf_bert.py", "hf" + suffix, hf_extra));
    }
    runs.push_back(RunScript(o, "torch_packed.py", "torch_packed" + suffix, extra));
  }
  return runs;
}

std::string ShellQuote(absl::string_view arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace padless::bench::e2e
