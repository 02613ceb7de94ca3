// GET /info: the fields of Hugging Face text-embeddings-inference's Info that apply to a padless
// classifier, so that TEI clients that read them (e.g. max_client_batch_size to split their
// batches, model_type.classifier.id2label) work unchanged; plus "device", padless's own.
#ifndef PADLESS_SERVE_HTTP_SERVER_INFO_H_
#define PADLESS_SERVE_HTTP_SERVER_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace padless::serve::http {

struct ServerInfo {
  std::string model_id;             // the model directory as given
  std::string model_dtype;          // "float32", "bfloat16" or "float16"
  std::string device;               // e.g. "cpu", "cuda:0"
  std::string kind = "classifier";  // ModelKindName: "classifier", "reranker" or "embedding"
  std::string pooling;              // embedding models: TEI's name of the pooling ("mean", ...)
  std::vector<std::string> labels;  // by label id (classifiers and rerankers)
  int64_t max_concurrent_requests = 0;
  int64_t max_input_length = 0;
  int64_t max_batch_tokens = 0;
  int64_t max_batch_requests = 0;
  int64_t max_client_batch_size = 0;
  bool auto_truncate = true;
  int64_t tokenization_workers = 0;
  std::string version;
};

std::string ServerInfoJson(const ServerInfo& info);

}  // namespace padless::serve::http

#endif  // PADLESS_SERVE_HTTP_SERVER_INFO_H_
