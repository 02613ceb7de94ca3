// The OpenAPI document (serve/http/openapi.json) describes every route of TEI's and OpenAI's APIs
// that padless serves, with its request and response schemas, and every reference in it resolves.
#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"
#include "padless/serve/http/openapi.h"

namespace padless::serve::http {
namespace {

using nlohmann::json;

// Every "$ref" under `node` names a schema of `doc`.
void ExpectReferencesResolve(const json& doc, const json& node, const std::string& where) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "$ref") {
        const std::string ref = value.get<std::string>();
        const std::string prefix = "#/components/schemas/";
        ASSERT_EQ(ref.rfind(prefix, 0), 0u) << where << ": " << ref;
        EXPECT_TRUE(doc["components"]["schemas"].contains(ref.substr(prefix.size())))
            << where << ": " << ref;
      } else {
        ExpectReferencesResolve(doc, value, where + "/" + key);
      }
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      ExpectReferencesResolve(doc, node[i], where + "/" + std::to_string(i));
    }
  }
}

TEST(OpenApiRoutesTest, EveryEmbeddingRerankAndTokenizerRoute) {
  const json doc = json::parse(std::string(OpenApiJson()));
  const std::pair<const char*, const char*> routes[] = {
      {"/embed", "EmbedRequest"},
      {"/embed_all", "EmbedAllRequest"},
      {"/rerank", "RerankRequest"},
      {"/similarity", "SimilarityRequest"},
      {"/tokenize", "TokenizeRequest"},
      {"/decode", "DecodeRequest"},
      {"/v1/embeddings", "OpenAICompatRequest"},
      {"/embeddings", "OpenAICompatRequest"},
  };
  for (const auto& [path, request] : routes) {
    ASSERT_TRUE(doc["paths"].contains(path)) << path;
    const json& post = doc["paths"][path]["post"];
    EXPECT_EQ(post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
              std::string("#/components/schemas/") + request)
        << path;
    for (const char* status : {"200", "400", "413", "415", "422", "503"}) {
      EXPECT_TRUE(post["responses"].contains(status)) << path << " " << status;
    }
  }
  for (const char* path : {"/embed", "/embed_all", "/rerank", "/similarity", "/v1/embeddings"}) {
    for (const char* status : {"424", "429"}) {
      EXPECT_TRUE(doc["paths"][path]["post"]["responses"].contains(status)) << path << status;
    }
  }
  // The OpenAI route answers TEI's OpenAI-compatible error shape.
  EXPECT_EQ(doc["paths"]["/v1/embeddings"]["post"]["responses"]["422"]["content"]
               ["application/json"]["schema"]["$ref"],
            "#/components/schemas/OpenAICompatErrorResponse");
  const json& schemas = doc["components"]["schemas"];
  EXPECT_EQ(schemas["EmbedRequest"]["properties"]["normalize"]["default"], true);
  EXPECT_EQ(schemas["TokenizeRequest"]["properties"]["add_special_tokens"]["default"], true);
  EXPECT_EQ(schemas["DecodeRequest"]["properties"]["skip_special_tokens"]["default"], true);
  EXPECT_EQ(schemas["RerankRequest"]["properties"]["raw_scores"]["default"], false);
  EXPECT_EQ(schemas["OpenAICompatRequest"]["properties"]["encoding_format"]["enum"],
            json::array({"float", "base64"}));
  ExpectReferencesResolve(doc, doc, "");
}

}  // namespace
}  // namespace padless::serve::http
