// The training CSV log and progress line (see training_log.h).
#include "training_log.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/base/directory.h"

namespace padless::train::internal {
namespace {

using base::IsRegularFile;

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const int64_t s = static_cast<int64_t>(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

std::string CsvRow(const StepLogRow& r, double loss, double tokens_per_s) {
  return absl::StrFormat(
      "%d,%d,%.6f,%.6g,%d,%d,%.4f,%.1f,%d,%d,%d,%d,%d\n", r.step, r.epoch, loss, r.lr,
      r.real_tokens, r.token_slots,
      r.token_slots > 0 ? static_cast<double>(r.real_tokens) / r.token_slots : 0.0, tokens_per_s,
      r.memory.allocated_bytes, r.memory.reserved_bytes, r.memory.peak_allocated_bytes,
      r.oom_splits, r.outcome.skipped() ? 1 : 0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingLog>> TrainingLog::Open(const std::string& csv_path,
                                                               bool resume, bool progress,
                                                               int64_t first_step,
                                                               int64_t total_steps) {
  std::unique_ptr<base::AppendFileWriter> csv;
  if (!csv_path.empty()) {
    const bool append = resume && IsRegularFile(csv_path);
    absl::StatusOr<std::unique_ptr<base::AppendFileWriter>> opened = base::AppendFileWriter::Open(
        csv_path, append ? base::AppendFileWriter::IfExists::kAppend
                         : base::AppendFileWriter::IfExists::kTruncate);
    if (!opened.ok()) return opened.status();
    csv = *std::move(opened);
    if (!append) {
      absl::Status header = csv->Append(
          "step,epoch,loss,lr,real_tokens,token_slots,padding_efficiency,real_tokens_per_s,"
          "allocated_bytes,reserved_bytes,peak_allocated_bytes,oom_splits,skipped\n");
      if (!header.ok()) return header;
    }
  }
  return std::unique_ptr<TrainingLog>(
      new TrainingLog(std::move(csv), progress, first_step, total_steps));
}

TrainingLog::TrainingLog(std::unique_ptr<base::AppendFileWriter> csv, bool progress,
                         int64_t first_step, int64_t total_steps)
    : csv_(std::move(csv)),
      progress_(progress),
      first_step_(first_step),
      total_steps_(total_steps) {}

TrainingLog::~TrainingLog() { EndLine(); }

void TrainingLog::Add(StepLogRow row) {
  window_tokens_ += row.real_tokens;
  pending_.push_back(std::move(row));
}

void TrainingLog::EndLine() {
  if (line_open_) absl::FPrintF(stderr, "\n");
  line_open_ = false;
}

double TrainingLog::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

absl::Status TrainingLog::Flush(int64_t global_step, int64_t skipped_steps) {
  if (pending_.empty()) return absl::OkStatus();
  std::vector<at::Tensor> losses;
  for (const StepLogRow& r : pending_) losses.push_back(r.loss);
  at::Tensor host = at::stack(losses).to(at::kCPU, at::kDouble);  // the one sync per window
  const double window_s = std::chrono::duration<double>(Clock::now() - window_start_).count();
  const double tps = window_s > 0 ? window_tokens_ / window_s : 0.0;
  double loss_sum = 0;
  int64_t finite_rows = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const double loss = host[i].item<double>();
    if (!pending_[i].outcome.skipped()) {
      loss_sum += loss;
      ++finite_rows;
    }
    // A failed row's error sticks in the writer (no row follows it) and is returned below.
    if (csv_) csv_->Append(CsvRow(pending_[i], loss, tps)).IgnoreError();
  }
  if (csv_ && !csv_->status().ok()) {
    return absl::InternalError(
        absl::StrCat("cannot write the training log: ", csv_->status().message()));
  }
  if (finite_rows > 0) final_loss_ = loss_sum / finite_rows;
  if (progress_) DrawProgress(global_step, skipped_steps, tps);
  pending_.clear();
  window_tokens_ = 0;
  window_start_ = Clock::now();
  return absl::OkStatus();
}

void TrainingLog::DrawProgress(int64_t global_step, int64_t skipped_steps, double tokens_per_s) {
  const int64_t done = global_step - first_step_;
  const double elapsed = elapsed_seconds();
  const double eta = done > 0 ? elapsed / done * (total_steps_ - global_step) : -1;
  absl::FPrintF(stderr, "\rstep %d/%d  epoch %d  loss %.4f  %.0f tok/s  ETA %s%s   ", global_step,
                total_steps_, pending_.back().epoch, final_loss_, tokens_per_s, FormatDuration(eta),
                skipped_steps > 0 ? absl::StrCat("  skipped ", skipped_steps, " non-finite") : "");
  line_open_ = true;
}

}  // namespace padless::train::internal
