// The README's "Train from C++" example, compiled and run by the install_consumer test against an
// installed padless: write a small labeled file, train a classifier on it with one RunTrainJob
// call (tiny preset, a few steps, so it stays fast), then load the model directory and predict,
// once through TextClassifier and once through the README's "Serve a model" engine example.
#include "padless/train/train_job.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "padless/serve/inference_engine.h"
#include "padless/serve/text_classifier.h"

namespace ptrain = padless::train;
namespace ps = padless::serve;

int main() {
  // No std::filesystem: libtorch.so exports some of its symbols, built against another ABI.
  char dir_template[] = "/tmp/padless_train_job_XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return std::printf("train_job: no temp dir\n"), 1;
  const std::string dir = dir_template;
  {
    std::ofstream data(dir + "/train.tsv");
    data << "label\ttext\n";
    for (int i = 0; i < 200; ++i) {
      data << (i % 2 ? "pos\ta truly wonderful , moving film number "
                     : "neg\ta dull and tedious mess , scene ")
           << i << "\n";
    }
  }

  // --- The README example: train a classifier from files.
  ptrain::TrainJobOptions job;
  job.data = dir + "/train.tsv";
  job.dev_fraction = 0.1;  // or job.dev = "dev.tsv"
  job.out = dir + "/model";
  job.vocab_size = 50;
  job.max_len = 32;
  job.max_tokens = 256;  // token slots per batch: several batches of this small file
  job.train.epochs(1).max_steps(3);
  job.device = c10::Device(c10::kCPU);
  job.quiet = true;
  absl::StatusOr<ptrain::TrainJobResult> result = ptrain::RunTrainJob(job);
  if (!result.ok()) return std::printf("train_job: %s\n", result.status().ToString().c_str()), 1;
  // --- end of the example.

  absl::StatusOr<std::unique_ptr<ps::TextClassifier>> classifier =
      ps::TextClassifier::Load(result->model_dir, ps::InferenceOptions());
  if (!classifier.ok()) return std::printf("%s\n", classifier.status().ToString().c_str()), 1;
  const std::vector<std::string> texts = {"a wonderful film", "a tedious mess"};
  absl::StatusOr<std::vector<ps::Prediction>> predictions = (*classifier)->Predict(texts);
  if (!predictions.ok()) return std::printf("%s\n", predictions.status().ToString().c_str()), 1;
  // The README's engine example (a text and a pair), on the CPU.
  ps::EngineOptions options;
  options.max_batch_tokens = 32768;
  auto engine = ps::InferenceEngine::Load(result->model_dir, options);
  if (!engine.ok()) return std::printf("%s\n", engine.status().ToString().c_str()), 1;
  std::vector<ps::EngineRequest> requests(2);
  requests[0].text = "a gripping film";
  requests[1].text = "is it good?";
  requests[1].pair = "it is";
  absl::StatusOr<ps::RequestHandle> handle = (*engine)->Submit(requests);
  if (!handle.ok()) return std::printf("%s\n", handle.status().ToString().c_str()), 1;
  int engine_results = 0;
  for (const auto& r : handle->Wait()) {
    if (!r.ok()) return std::printf("%s\n", r.status().ToString().c_str()), 1;
    std::printf("engine: %s %.3f\n", (*engine)->model().labels.Name(r->label_id).c_str(),
                r->probabilities[r->label_id]);
    ++engine_results;
  }
  std::printf("train_job: %lld steps on %lld examples, dev %lld, predicted %s and %s\n",
              static_cast<long long>(result->train.steps),
              static_cast<long long>(result->train_examples),
              static_cast<long long>(result->dev_examples), (*predictions)[0].label.c_str(),
              (*predictions)[1].label.c_str());
  std::system(("rm -rf '" + dir + "'").c_str());
  return result->train.steps == 3 && predictions->size() == 2 && engine_results == 2 ? 0 : 1;
}
