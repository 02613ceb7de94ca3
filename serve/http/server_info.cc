#include "padless/serve/http/server_info.h"

#include "nlohmann/json.hpp"

namespace padless::serve::http {

namespace {

// TEI's ModelType: {"classifier": {id2label, label2id}}, {"reranker": {...}} or
// {"embedding": {"pooling": "mean"}}.
nlohmann::json ModelType(const ServerInfo& info, const nlohmann::json& id2label,
                         const nlohmann::json& label2id) {
  if (info.kind == "embedding") return {{"embedding", {{"pooling", info.pooling}}}};
  return {{info.kind, {{"id2label", id2label}, {"label2id", label2id}}}};
}

}  // namespace

std::string ServerInfoJson(const ServerInfo& info) {
  nlohmann::json id2label = nlohmann::json::object();
  nlohmann::json label2id = nlohmann::json::object();
  for (size_t i = 0; i < info.labels.size(); ++i) {
    id2label[std::to_string(i)] = info.labels[i];
    label2id[info.labels[i]] = i;
  }
  const nlohmann::json j = {
      {"model_id", info.model_id},
      {"model_sha", nullptr},
      {"model_dtype", info.model_dtype},
      {"model_type", ModelType(info, id2label, label2id)},
      {"max_concurrent_requests", info.max_concurrent_requests},
      {"max_input_length", info.max_input_length},
      {"max_batch_tokens", info.max_batch_tokens},
      {"max_batch_requests", info.max_batch_requests},
      {"max_client_batch_size", info.max_client_batch_size},
      {"auto_truncate", info.auto_truncate},
      {"tokenization_workers", info.tokenization_workers},
      {"version", info.version},
      {"sha", nullptr},
      {"docker_label", nullptr},
      {"device", info.device},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace padless::serve::http
