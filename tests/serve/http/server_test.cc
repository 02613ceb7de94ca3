// `padless serve` end to end: the real binary on a free port (--port 0) over a tiny model
// directory, driven with cpp-httplib's client: every route, every error status, keep-alive,
// concurrent clients, a full queue, and the SIGTERM drain.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "serve_fixtures.h"
#include "server_process.h"

namespace padless::serve::testing {
namespace {

using nlohmann::json;

const std::string& ModelDir() {
  static const std::string* dir = new std::string(WriteSmallModelDir("http_server"));
  return *dir;
}

// A server with small limits, so that each limit is easy to cross.
void StartServer(ServerProcess& server, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--model",
                                   ModelDir(),
                                   "--port",
                                   "0",
                                   "--device",
                                   "cpu",
                                   "--log-level",
                                   "debug",
                                   "--max-client-batch-size",
                                   "4",
                                   "--body-limit",
                                   "65536",
                                   "--tokenizer-threads",
                                   "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  ASSERT_TRUE(server.Start(args)) << server.log();
}

httplib::Result Post(httplib::Client& client, const std::string& path, const std::string& body) {
  return client.Post(path.c_str(), body, "application/json");
}

// The /metrics text once it contains `needle`, or after 10 s the last text read. httplib records a
// request (its logger) after writing the response, on the server thread that answered it; when a
// connection closes (after a 413, whose body the server did not read) the next requests go to
// another thread, so a client can see a response before its count lands (seen once under ASan).
std::string MetricsWith(httplib::Client& client, const std::string& needle) {
  std::string text;
  for (int attempt = 0; attempt < 500; ++attempt) {
    const httplib::Result r = client.Get("/metrics");
    text = r ? r->body : "";
    if (text.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return text;
}

// The TEI error body of `r`, checked for shape.
json ErrorBody(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no response";
  if (!r) return json();
  const json j = json::parse(r->body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error") && j.contains("error_type")) << r->body;
  return j;
}

// One request sent as raw bytes, for what httplib's client cannot send (a POST body without a
// Content-Type: it adds text/plain); the whole response, read until the server closes (the
// request is to say `Connection: close`).
std::string RawHttpExchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{10, 0};  // a server that never answers fails the test, not hangs it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
  }
  ::close(fd);
  return response;
}

// A raw POST /predict of `body` with `headers` (each ending in \r\n), answered on a fresh
// connection.
std::string RawPredict(int port, const std::string& headers, const std::string& body) {
  return RawHttpExchange(
      port, "POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers +
                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

// Checks one input's ranked labels: every label once, scores descending; probabilities sum to 1.
void ExpectRanked(const json& ranked, bool probabilities) {
  ASSERT_TRUE(ranked.is_array()) << ranked;
  ASSERT_EQ(ranked.size(), 3u) << ranked;
  std::set<std::string> labels;
  double sum = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    labels.insert(ranked[i]["label"].get<std::string>());
    sum += ranked[i]["score"].get<double>();
    if (i > 0) {
      EXPECT_GE(ranked[i - 1]["score"].get<double>(), ranked[i]["score"].get<double>());
    }
  }
  EXPECT_EQ(labels, (std::set<std::string>{"neg", "neutral", "pos"}));
  if (probabilities) {
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
}

TEST(ServeTest, EveryRouteAnswers) {
  ServerProcess server;
  StartServer(server);
  httplib::Client client("127.0.0.1", server.port());
  client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  EXPECT_EQ(client.Get("/health")->status, 200);
  const json info = json::parse(client.Get("/info")->body);
  EXPECT_EQ(info["model_id"], ModelDir());
  EXPECT_EQ(info["model_type"]["classifier"]["id2label"]["2"], "pos");
  EXPECT_EQ(info["max_client_batch_size"], 4);
  EXPECT_EQ(info["max_input_length"], 32);  // clamped to the model's positions
  const json openapi = json::parse(client.Get("/openapi.json")->body);
  EXPECT_TRUE(openapi["paths"].contains("/predict"));

  ExpectRanked(json::parse(Post(client, "/predict", R"({"inputs": "good film"})")->body), true);
  ExpectRanked(json::parse(Post(client, "/", R"({"inputs": "good film"})")->body), true);
  ExpectRanked(json::parse(Post(client, "/predict", R"({"inputs": ["good", "bad plot"]})")->body),
               true);
  const json batch = json::parse(
      Post(client, "/predict", R"({"inputs": [["good film"], ["a", "b"], [" "]]})")->body);
  ASSERT_EQ(batch.size(), 3u);
  for (const json& ranked : batch) ExpectRanked(ranked, true);
  ExpectRanked(
      json::parse(Post(client, "/predict", R"({"inputs": "good", "raw_scores": true})")->body),
      false);
  // Root and /predict are one route: the same answer for the same text.
  EXPECT_EQ(Post(client, "/", R"({"inputs": "the story"})")->body,
            Post(client, "/predict", R"({"inputs": "the story"})")->body);

  const std::string metrics = client.Get("/metrics")->body;
  for (const char* family :
       {"padless_http_requests_total{route=\"/predict\",status=\"200\"}", "padless_queue_size",
        "padless_batch_size_bucket", "padless_batch_tokens_bucket",
        "padless_http_request_duration_seconds_bucket", "padless_ready 1"}) {
    EXPECT_NE(metrics.find(family), std::string::npos) << family << "\n" << metrics;
  }
  EXPECT_NE(server.log().find("POST /predict 200"), std::string::npos) << server.log();
  // The request log counts each request's inputs and the model tokens they became (the batch of
  // three above; a GET carries none).
  const std::string log = server.log();
  EXPECT_TRUE(log.find("inputs=3 tokens=") != std::string::npos) << log;
  EXPECT_TRUE(log.find("GET /health 200") != std::string::npos) << log;
  EXPECT_NE(log.find("inputs=0 peer="), std::string::npos) << log;
}

TEST(ServeTest, ErrorsHaveTeiStatusesAndBodies) {
  ServerProcess server;
  StartServer(server);
  httplib::Client client("127.0.0.1", server.port());
  client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  EXPECT_EQ(Post(client, "/predict", "{not json")->status, 400);
  EXPECT_EQ(Post(client, "/predict", "")->status, 400);
  EXPECT_EQ(Post(client, "/predict", std::string("\xff\xfe\x00\x01", 4))->status, 400);
  EXPECT_EQ(Post(client, "/predict", std::string(1000, '['))->status, 400);
  EXPECT_EQ(Post(client, "/predict", R"({"inputs": 3})")->status, 422);
  EXPECT_EQ(Post(client, "/predict", R"({"inputs": []})")->status, 422);
  EXPECT_EQ(Post(client, "/predict", R"({"text": "x"})")->status, 422);
  httplib::Result r =
      Post(client, "/predict", R"({"inputs": [["a"], ["b"], ["c"], ["d"], ["e"]]})");
  EXPECT_EQ(r->status, 422);  // TEI's Validation since v1.9.0 (413 before)
  EXPECT_EQ(ErrorBody(r)["error_type"], "Validation");
  EXPECT_EQ(ErrorBody(r)["error"], "batch size 5 > maximum allowed batch size 4");
  const std::string long_text = Words(200, 1);  // far over the model's 32 positions
  r = Post(client, "/predict", json{{"inputs", long_text}, {"truncate", false}}.dump());
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(ErrorBody(r)["error_type"], "Validation");
  EXPECT_EQ(Post(client, "/predict", json{{"inputs", long_text}}.dump())->status, 200);
  r = Post(client, "/predict", json{{"inputs", std::string(70000, 'a')}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);  // over --body-limit 65536
  EXPECT_EQ(ErrorBody(r)["error_type"], "Validation");
  EXPECT_NE(ErrorBody(r)["error"].get<std::string>().find("length limit exceeded"),
            std::string::npos);
  r = client.Get("/nope");
  EXPECT_EQ(r->status, 404);
  ErrorBody(r);
  r = client.Get("/predict");
  EXPECT_EQ(r->status, 405);
  ErrorBody(r);
  EXPECT_EQ(Post(client, "/health", "{}")->status, 405);
  EXPECT_EQ(client.Get("/health")->status, 200);  // still serving after all that
  const std::string metrics = MetricsWith(client, "route=\"other\",status=\"404\"");
  EXPECT_NE(metrics.find("padless_errors_total{type=\"Validation\"}"), std::string::npos);
  EXPECT_NE(metrics.find("route=\"other\",status=\"404\""), std::string::npos) << metrics;
  // At --log-level debug a refused request's line carries its error message.
  EXPECT_NE(server.log().find("error=\"batch size 5 > maximum allowed batch size 4\""),
            std::string::npos)
      << server.log();
}

// An empty text is 400 Empty (TEI's); a body whose Content-Type is absent or not JSON is 415 on
// both POST routes, before the body is parsed; both with TEI's error body.
TEST(ServeTest, EmptyTextsAndBodiesThatAreNotJsonByTypeAreRefused) {
  ServerProcess server;
  StartServer(server);
  httplib::Client client("127.0.0.1", server.port());
  client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  for (const char* body :
       {R"({"inputs": ""})", R"({"inputs": ["premise", ""]})", R"({"inputs": ["", "hypothesis"]})",
        R"({"inputs": [["a"], [""]]})", R"({"inputs": [["a"], ["b", ""]]})"}) {
    for (const char* path : {"/predict", "/"}) {
      const httplib::Result r = Post(client, path, body);
      ASSERT_TRUE(r) << path << " " << body;
      EXPECT_EQ(r->status, 400) << path << " " << body << " " << r->body;
      const json error = ErrorBody(r);
      EXPECT_EQ(error["error_type"], "Empty") << r->body;
      EXPECT_NE(error["error"].get<std::string>().find("empty"), std::string::npos) << r->body;
    }
  }

  const std::string valid = R"({"inputs": "good film"})";
  for (const char* type :
       {"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "text/json",
        "application/octet-stream"}) {
    for (const char* path : {"/predict", "/"}) {
      const httplib::Result r = client.Post(path, valid, type);
      ASSERT_TRUE(r) << path << " " << type;
      EXPECT_EQ(r->status, 415) << path << " " << type << " " << r->body;
      const json error = ErrorBody(r);
      EXPECT_EQ(error["error_type"], "Validation") << r->body;
      EXPECT_NE(error["error"].get<std::string>().find("`Content-Type: application/json`"),
                std::string::npos)
          << r->body;
    }
  }
  // The type is checked before the body: not JSON by type and by content is 415, not 400.
  EXPECT_EQ(client.Post("/predict", "{not json", "text/plain")->status, 415);
  // Another method on a POST route is still 405, whatever its type.
  EXPECT_EQ(client.Post("/health", valid, "text/plain")->status, 405);
  for (const char* type :
       {"application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"}) {
    const httplib::Result r = client.Post("/predict", valid, type);
    ASSERT_TRUE(r) << type;
    EXPECT_EQ(r->status, 200) << type << " " << r->body;
  }

  // No Content-Type at all: 415, as TEI answers it. The same bytes with the header are served.
  const std::string missing = RawPredict(server.port(), "", valid);
  EXPECT_EQ(missing.substr(0, 12), "HTTP/1.1 415") << missing;
  const size_t body_at = missing.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos) << missing;
  const json error = json::parse(missing.substr(body_at + 4), nullptr, false);
  ASSERT_TRUE(error.is_object()) << missing;
  EXPECT_EQ(error["error_type"], "Validation") << missing;
  EXPECT_NE(error["error"].get<std::string>().find("no Content-Type"), std::string::npos)
      << missing;
  const std::string with_type =
      RawPredict(server.port(), "Content-Type: application/json\r\n", valid);
  EXPECT_EQ(with_type.substr(0, 12), "HTTP/1.1 200") << with_type;

  EXPECT_EQ(client.Get("/health")->status, 200);  // still serving
  const std::string metrics = MetricsWith(client, "route=\"/predict\",status=\"415\"");
  EXPECT_NE(metrics.find("route=\"/predict\",status=\"415\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("route=\"/\",status=\"400\""), std::string::npos) << metrics;
}

TEST(ServeTest, KeepAliveServesManyRequestsOnOneConnection) {
  ServerProcess server;
  StartServer(server, {"--log-level", "info"});
  httplib::Client client("127.0.0.1", server.port());
  client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  client.set_keep_alive(true);
  for (int i = 0; i < 25; ++i) {
    httplib::Result r = Post(client, "/predict", json{{"inputs", Words(5, i)}}.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // Every request came from the same client port: one connection.
  const std::string log = server.log();
  std::set<std::string> peers;
  for (size_t at = log.find("peer="); at != std::string::npos; at = log.find("peer=", at + 1)) {
    peers.insert(log.substr(at, log.find('\n', at) - at));
  }
  EXPECT_EQ(peers.size(), 1u) << log;
}

TEST(ServeTest, ConcurrentClientsGetTheirOwnResults) {
  ServerProcess server;
  StartServer(server, {"--log-level", "warn", "--max-batch-delay-us", "2000"});
  constexpr int kThreads = 16, kPerThread = 8;
  std::map<std::string, std::string> alone;  // text -> answer when sent alone
  httplib::Client first("127.0.0.1", server.port());
  first.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    const std::string body = json{{"inputs", Words(1 + i % 20, i)}}.dump();
    alone[body] = Post(first, "/predict", body)->body;
  }
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
      client.set_keep_alive(true);
      for (int k = 0; k < kPerThread; ++k) {
        const std::string body =
            json{{"inputs", Words(1 + (t * kPerThread + k) % 20, t * kPerThread + k)}}.dump();
        httplib::Result r = Post(client, "/predict", body);
        if (!r || r->status != 200) {
          ++failures;
          continue;
        }
        const json got = json::parse(r->body), want = json::parse(alone[body]);
        for (size_t i = 0; i < want.size(); ++i) {
          if (got[i]["label"] != want[i]["label"] ||
              std::abs(got[i]["score"].get<double>() - want[i]["score"].get<double>()) > 1e-5) {
            ++mismatches;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << server.log();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ServeTest, FullQueueAnswers429AndLosesNothing) {
  ServerProcess server;
  StartServer(server, {"--log-level", "error", "--max-concurrent-requests", "4",
                       "--max-batch-requests", "4"});
  std::atomic<int> ok{0}, overloaded{0};
  std::mutex mu;
  std::vector<std::string> other;  // anything but 200 or 429 Overloaded
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
      client.set_keep_alive(true);
      for (int k = 0; k < 20; ++k) {
        const json body = {{"inputs", {{Words(30, t + k)}, {Words(30, k)}, {Words(30, t)}}}};
        httplib::Result r = Post(client, "/predict", body.dump());
        if (r && r->status == 200) {
          ++ok;
        } else if (r && r->status == 429 && ErrorBody(r)["error_type"] == "Overloaded") {
          ++overloaded;
        } else {
          std::lock_guard<std::mutex> lock(mu);
          other.push_back(r ? std::to_string(r->status) + " " + r->body
                            : "no response: " + httplib::to_string(r.error()));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(overloaded.load(), 0) << "16 clients never filled a queue of 4";
  EXPECT_TRUE(other.empty()) << other.size() << " other answers, the first: " << other[0] << "\n"
                             << server.log();
  const std::string metrics = httplib::Client("127.0.0.1", server.port()).Get("/metrics")->body;
  EXPECT_NE(metrics.find("padless_errors_total{type=\"Overloaded\"}"), std::string::npos);
}

TEST(ServeTest, SigtermDrainsAndExitsZero) {
  ServerProcess server;
  StartServer(server, {"--log-level", "info"});
  std::atomic<bool> signalled{false};
  std::atomic<int> ok_after_signal{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_tcp_nodelay(true);  // no 40 ms Nagle stall per request
      client.set_keep_alive(true);
      for (int k = 0; k < 400; ++k) {
        const bool after = signalled.load();
        const json body = {{"inputs", {{Words(25, t)}, {Words(25, k)}, {Words(10, t + k)}}}};
        httplib::Result r = Post(client, "/predict", body.dump());
        if (!r) break;                // the listener closed: the drain is under way
        if (r->status == 503) break;  // a new request during the drain
        if (r->status != 200) ++bad;
        if (after) ++ok_after_signal;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  signalled = true;
  server.Signal(SIGTERM);
  const std::optional<int> code = server.Wait(std::chrono::seconds(20));
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(code.has_value()) << "no exit 20 s after SIGTERM\n" << server.log();
  EXPECT_EQ(*code, 0) << server.log();
  EXPECT_EQ(bad.load(), 0) << server.log();
  EXPECT_NE(server.log().find("drained"), std::string::npos) << server.log();
}

TEST(ServeTest, SigintDrainsAnIdleServer) {
  ServerProcess server;
  StartServer(server);
  server.Signal(SIGINT);
  const std::optional<int> code = server.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << server.log();
  EXPECT_EQ(*code, 0) << server.log();
}

}  // namespace
}  // namespace padless::serve::testing
