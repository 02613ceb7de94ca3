// HttpServer in process: 503 while the model loads and once a drain begins, ready in between.
// (The binary cannot be caught loading: a tiny model loads in milliseconds.)
#include "padless/serve/http/http_server.h"

#include <httplib.h>

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "serve_fixtures.h"

namespace padless::serve::http {
namespace {

TEST(HttpServerTest, LoadingAndDrainingAnswer503) {
  ServerOptions options;
  options.port = 0;
  options.io_threads = 2;
  HttpServer server(options, /*log=*/nullptr);
  absl::StatusOr<int> port = server.Bind();
  ASSERT_TRUE(port.ok()) << port.status();
  ASSERT_TRUE(server.Start().ok());
  httplib::Client client("127.0.0.1", *port);
  client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  httplib::Result r = client.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error_type"], "Unhealthy");
  EXPECT_EQ(client.Post("/predict", R"({"inputs": "x"})", "application/json")->status, 503);
  EXPECT_EQ(client.Get("/info")->status, 503);
  r = client.Get("/metrics");
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("padless_ready 0"), std::string::npos);

  absl::StatusOr<std::unique_ptr<InferenceEngine>> engine =
      InferenceEngine::Load(testing::WriteSmallModelDir("http_server_inproc"));
  ASSERT_TRUE(engine.ok()) << engine.status();
  ServerInfo info;
  info.labels = (*engine)->model().labels.names();
  server.SetEngine(std::move(*engine), info);
  EXPECT_TRUE(server.ready());
  EXPECT_EQ(client.Get("/health")->status, 200);
  EXPECT_EQ(client.Post("/predict", R"({"inputs": "x"})", "application/json")->status, 200);

  server.BeginDrain();
  EXPECT_EQ(client.Get("/health")->status, 503);
  EXPECT_EQ(client.Post("/predict", R"({"inputs": "x"})", "application/json")->status, 503);
  server.Drain();
  EXPECT_FALSE(client.Get("/health"));  // the listener is closed
}

}  // namespace
}  // namespace padless::serve::http
