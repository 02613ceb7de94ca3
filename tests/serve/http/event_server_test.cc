// The transport of `padless serve` (event_server.h) alone, through raw sockets (raw_http_client.h)
// and a trivial echo handler: HTTP/1.1 framing, keep-alive and pipelining, the transport's own
// errors (400, 408, 413, 431, 500, 503) in TEI's JSON shape, the deadlines, the connection cap, a
// flood of idle and slow connections beside a normal request, answers from other threads, and the
// drain. Also in the TSan binary (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "padless/serve/http/event_server.h"
#include "raw_http_client.h"

namespace padless::serve::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Sanitizers slow everything down: the generous bounds below grow with them.
#if defined(__SANITIZE_THREAD__)
constexpr int kSanitizerSlowdown = 5;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kSanitizerSlowdown = 3;
#else
constexpr int kSanitizerSlowdown = 1;
#endif

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

template <typename Predicate>
bool WaitUntil(Predicate done, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// The body's error_type when it is TEI's error shape; "" otherwise.
std::string ErrorTypeOf(const RawReply& reply) {
  const nlohmann::json j = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("error") || !j.contains("error_type")) return "";
  return j["error_type"].get<std::string>();
}

// The echo routes: "METHOD PATH CONTENT-TYPE BODY" as text/plain, except
//   /send   answered with Send from another thread, 20 ms later
//   /defer  answered with Defer from another thread; the maker records its thread
//   /drop   the responder dropped unanswered;  /throw  the handler throws
//   /hold   the responder kept until the test takes it (TakeHeld)
class EchoRoutes {
 public:
  ~EchoRoutes() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

  RequestHandler Handler() {
    return [this](HttpRequest request, std::shared_ptr<Responder> responder) {
      Handle(std::move(request), std::move(responder));
    };
  }

  std::shared_ptr<Responder> TakeHeld(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    held_cv_.wait_for(lock, timeout, [this] { return held_ != nullptr; });
    return std::move(held_);
  }

  std::thread::id maker_thread() const {
    std::lock_guard<std::mutex> lock(mu_);
    return maker_thread_;
  }
  std::thread::id worker_thread() const {
    std::lock_guard<std::mutex> lock(mu_);
    return worker_thread_;
  }

 private:
  static HttpResponse Text(std::string body) { return {200, "text/plain", std::move(body), {}}; }

  void Handle(HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/throw") throw std::runtime_error("boom");
    if (request.path == "/drop") return;
    std::lock_guard<std::mutex> lock(mu_);
    if (request.path == "/hold") {
      held_ = std::move(responder);
      held_cv_.notify_all();
    } else if (request.path == "/send") {
      threads_.emplace_back([responder] {
        std::this_thread::sleep_for(20ms);
        responder->Send(Text("sent"));
      });
    } else if (request.path == "/defer") {
      threads_.emplace_back([this, responder] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          worker_thread_ = std::this_thread::get_id();
        }
        responder->Defer([this] {
          std::lock_guard<std::mutex> lock(mu_);
          maker_thread_ = std::this_thread::get_id();
          return HttpResponse{200, "text/plain", "deferred", {{"x-compute-type", "padless"}}};
        });
      });
    } else {
      responder->Send(Text(absl::StrCat(request.method, " ", request.path, " ",
                                        request.content_type.value_or("-"), " ", request.body)));
    }
  }

  mutable std::mutex mu_;
  std::condition_variable held_cv_;
  std::shared_ptr<Responder> held_;
  std::vector<std::thread> threads_;
  std::thread::id maker_thread_;
  std::thread::id worker_thread_;
};

class EventServerTest : public ::testing::Test {
 protected:
  void StartServer(EventServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<EventServer>(options, routes_.Handler(),
                                            [this](const AnsweredRequest& answer) {
                                              std::lock_guard<std::mutex> lock(mu_);
                                              answers_.push_back(answer);
                                            });
    absl::StatusOr<int> port = server_->Bind();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
    ASSERT_TRUE(server_->Start().ok());
  }

  void TearDown() override { server_.reset(); }

  std::vector<AnsweredRequest> Answers() {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_;
  }

  // One request on a new connection; its reply.
  std::optional<RawReply> RequestOnce(const std::string& request) {
    RawHttpClient client(port_);
    if (!client.connected() || !client.Send(request)) return std::nullopt;
    return client.Read();
  }

  EchoRoutes routes_;  // first: outlives the server, whose threads call it
  std::unique_ptr<EventServer> server_;
  int port_ = -1;
  std::mutex mu_;
  std::vector<AnsweredRequest> answers_;
};

TEST_F(EventServerTest, AnswersGetAndPost) {
  StartServer();
  RawHttpClient client(port_);
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(GetRequest("/hello?x=1")));
  std::optional<RawReply> reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "GET /hello - ");
  EXPECT_EQ(reply->Header("content-type"), "text/plain");

  ASSERT_TRUE(client.Send(PostRequest("/echo", R"({"inputs":"hi"})")));
  reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, R"(POST /echo application/json {"inputs":"hi"})");

  ASSERT_TRUE(WaitUntil([&] { return Answers().size() == 2; }, 2s));
  const AnsweredRequest post = Answers()[1];
  EXPECT_EQ(post.method, "POST");
  EXPECT_EQ(post.path, "/echo");
  EXPECT_EQ(post.status, 200);
  EXPECT_EQ(post.request_bytes, 15u);
  EXPECT_EQ(post.response_bytes, reply->body.size());
  EXPECT_TRUE(post.delivered);
  EXPECT_TRUE(post.error.empty());
  EXPECT_EQ(post.peer.rfind("127.0.0.1:", 0), 0u) << post.peer;
  EXPECT_EQ(server_->open_connections(), 1);
}

TEST_F(EventServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartServer();
  RawHttpClient client(port_);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client.Send(PostRequest("/n", std::to_string(i), "text/plain")));
    std::optional<RawReply> reply = client.Read();
    ASSERT_TRUE(reply.has_value()) << i;
    EXPECT_EQ(reply->body, absl::StrCat("POST /n text/plain ", i));
    EXPECT_NE(reply->Header("connection"), "close");
  }
  EXPECT_EQ(server_->open_connections(), 1);
}

TEST_F(EventServerTest, ConnectionCloseAndHttp10AreHonoured) {
  StartServer();
  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send(GetRequest("/bye", "Connection: close\r\n")));
  std::optional<RawReply> reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->Header("connection"), "close");
  EXPECT_TRUE(client.ClosedWithin(2s));

  RawHttpClient old(port_);
  ASSERT_TRUE(old.Send("GET /old HTTP/1.0\r\n\r\n"));
  reply = old.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "GET /old - ");
  EXPECT_TRUE(old.ClosedWithin(2s));
}

TEST_F(EventServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  RawHttpClient client(port_);
  // The first is answered last by its handler (20 ms later, from another thread).
  ASSERT_TRUE(client.Send(absl::StrCat(GetRequest("/send"), GetRequest("/a"),
                                       PostRequest("/b", "xyz", "text/plain"), GetRequest("/defer"),
                                       GetRequest("/c"))));
  const std::vector<std::string> expected = {"sent", "GET /a - ", "POST /b text/plain xyz",
                                             "deferred", "GET /c - "};
  for (const std::string& body : expected) {
    std::optional<RawReply> reply = client.Read();
    ASSERT_TRUE(reply.has_value()) << body;
    EXPECT_EQ(reply->body, body);
  }
}

TEST_F(EventServerTest, HeadGetsTheHeadersOnly) {
  StartServer();
  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<RawReply> reply = client.Read(5s, /*head=*/true);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->Header("content-length"), std::to_string(std::string("HEAD /h - ").size()));
  // Had a body followed, this would read it as the next response.
  ASSERT_TRUE(client.Send(GetRequest("/next")));
  reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "GET /next - ");
}

TEST_F(EventServerTest, ExpectContinueGetsA100BeforeTheBody) {
  StartServer();
  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send(
      "POST /up HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
      "Expect: 100-continue\r\n\r\n"));
  std::optional<RawReply> reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 100);
  ASSERT_TRUE(client.Send("hello"));
  reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "POST /up text/plain hello");
}

TEST_F(EventServerTest, BodyOverTheLimitIs413AndTheConnectionClosesCleanly) {
  EventServerOptions options;
  options.body_limit = 100;
  StartServer(options);
  std::optional<RawReply> reply = RequestOnce(PostRequest("/at", std::string(100, 'a')));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);  // at the limit

  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send(PostRequest("/big", std::string(1000, 'b'))));
  reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 413);
  EXPECT_EQ(ErrorTypeOf(*reply), "Validation") << reply->body;
  EXPECT_EQ(reply->Header("connection"), "close");
  EXPECT_TRUE(client.ClosedWithin(3s));

  // Chunked, so that the limit is met while the body arrives.
  RawHttpClient chunked(port_);
  ASSERT_TRUE(chunked.Send(
      absl::StrCat("POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nc8\r\n",
                   std::string(200, 'c'), "\r\n0\r\n\r\n")));
  reply = chunked.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 413);

  // The observer runs as each write completes, so the connections' answers come in any order.
  ASSERT_TRUE(WaitUntil([&] { return Answers().size() == 3; }, 2s));
  int too_large = 0;
  for (const AnsweredRequest& answer : Answers()) {
    if (answer.status != 413) continue;
    ++too_large;
    EXPECT_EQ(answer.method, "POST");
    EXPECT_EQ(answer.path, "/big");
    EXPECT_FALSE(answer.error.empty());
  }
  EXPECT_EQ(too_large, 2);
}

TEST_F(EventServerTest, MalformedRequestsAre400AndOversizedHeaders431) {
  EventServerOptions options;
  options.header_limit = 1024;
  StartServer(options);
  for (const std::string& bad :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/9.9\r\nHost: t\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nNo colon here\r\n\r\n")}) {
    RawHttpClient client(port_);
    ASSERT_TRUE(client.Send(bad));
    std::optional<RawReply> reply = client.Read();
    ASSERT_TRUE(reply.has_value()) << bad;
    EXPECT_EQ(reply->status, 400) << bad;
    EXPECT_EQ(ErrorTypeOf(*reply), "Validation") << reply->body;
    EXPECT_TRUE(client.ClosedWithin(3s)) << bad;
  }
  std::optional<RawReply> reply =
      RequestOnce(GetRequest("/", absl::StrCat("X-Big: ", std::string(2000, 'x'), "\r\n")));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 431);
}

TEST_F(EventServerTest, HeaderDeadlineAnswers408) {
  EventServerOptions options;
  options.header_timeout = 300ms;
  StartServer(options);
  RawHttpClient client(port_);
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(client.Send("GET /slow HT"));
  std::optional<RawReply> reply = client.Read(2s);
  const double ms = MillisSince(start);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 408);
  EXPECT_EQ(ErrorTypeOf(*reply), "Validation");
  EXPECT_GE(ms, 250);
  EXPECT_TRUE(client.ClosedWithin(3s));
}

TEST_F(EventServerTest, BodyDeadlineAnswers408) {
  EventServerOptions options;
  options.body_timeout = 300ms;
  StartServer(options);
  RawHttpClient client(port_);
  const Clock::time_point start = Clock::now();
  ASSERT_TRUE(
      client.Send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: "
                  "10\r\n\r\nabc"));
  std::optional<RawReply> reply = client.Read(2s);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 408);
  EXPECT_GE(MillisSince(start), 250);
  EXPECT_TRUE(client.ClosedWithin(3s));
  ASSERT_TRUE(WaitUntil([&] { return Answers().size() == 1; }, 2s));
  EXPECT_EQ(Answers()[0].path, "/slow");
}

TEST_F(EventServerTest, IdleConnectionsCloseAfterTheIdleTimeout) {
  EventServerOptions options;
  options.idle_timeout = 300ms;
  StartServer(options);
  RawHttpClient silent(port_);
  RawHttpClient served(port_);
  ASSERT_TRUE(served.Send(GetRequest("/once")));
  ASSERT_TRUE(served.Read().has_value());
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(silent.ClosedWithin(2s));
  EXPECT_TRUE(served.ClosedWithin(2s));
  EXPECT_GE(MillisSince(start), 150);
  EXPECT_TRUE(WaitUntil([&] { return server_->open_connections() == 0; }, 2s));
}

TEST_F(EventServerTest, ConnectionOverTheCapIsAnswered503) {
  EventServerOptions options;
  options.max_connections = 4;
  StartServer(options);
  ASSERT_EQ(server_->max_connections(), 4);
  std::vector<std::unique_ptr<RawHttpClient>> open;
  for (int i = 0; i < 4; ++i) open.push_back(std::make_unique<RawHttpClient>(port_));
  ASSERT_TRUE(WaitUntil([&] { return server_->open_connections() == 4; }, 2s));

  RawHttpClient fifth(port_);
  ASSERT_TRUE(fifth.connected());
  fifth.Send(GetRequest("/fifth"));  // may fail: the server may have answered and closed already
  std::optional<RawReply> reply = fifth.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 503);
  EXPECT_EQ(ErrorTypeOf(*reply), "Overloaded") << reply->body;
  EXPECT_TRUE(fifth.ClosedWithin(3s));
  EXPECT_EQ(server_->rejected_connections(), 1);

  open[0]->Close();
  ASSERT_TRUE(WaitUntil([&] { return server_->open_connections() == 3; }, 2s));
  reply = RequestOnce(GetRequest("/later"));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
}

TEST_F(EventServerTest, AnswersFromOtherThreads) {
  StartServer();
  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send(GetRequest("/send")));
  std::optional<RawReply> reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "sent");

  ASSERT_TRUE(client.Send(GetRequest("/defer")));
  reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "deferred");
  EXPECT_EQ(reply->Header("x-compute-type"), "padless");
  // The maker ran on an I/O thread, not on the thread that called Defer.
  EXPECT_NE(routes_.maker_thread(), std::thread::id());
  EXPECT_NE(routes_.maker_thread(), routes_.worker_thread());
  EXPECT_NE(routes_.maker_thread(), std::this_thread::get_id());
}

TEST_F(EventServerTest, DroppedResponderAndThrowingHandlerAnswer500) {
  StartServer();
  RawHttpClient client(port_);
  for (const char* path : {"/drop", "/throw"}) {
    ASSERT_TRUE(client.Send(GetRequest(path)));
    std::optional<RawReply> reply = client.Read();
    ASSERT_TRUE(reply.has_value()) << path;
    EXPECT_EQ(reply->status, 500) << path;
    EXPECT_EQ(ErrorTypeOf(*reply), "Backend") << reply->body;
  }
  ASSERT_TRUE(client.Send(GetRequest("/still")));  // the connection still serves
  std::optional<RawReply> reply = client.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200);
}

TEST_F(EventServerTest, DrainAnswersTheRequestInFlightAndRefusesNewConnections) {
  StartServer();
  RawHttpClient idle(port_);
  ASSERT_TRUE(idle.Send(GetRequest("/a")));
  ASSERT_TRUE(idle.Read().has_value());
  RawHttpClient busy(port_);
  ASSERT_TRUE(busy.Send(GetRequest("/hold")));
  std::shared_ptr<Responder> held = routes_.TakeHeld(2s);
  ASSERT_NE(held, nullptr);
  RawHttpClient partial(port_);
  ASSERT_TRUE(partial.Send("GET /half HTTP/1.1\r\nHost"));
  ASSERT_TRUE(WaitUntil([&] { return server_->open_connections() == 3; }, 2s));

  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    server_->Drain();
    drained = true;
  });
  EXPECT_TRUE(idle.ClosedWithin(2s));
  std::optional<RawReply> reply = partial.Read(2s);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 503);
  EXPECT_EQ(ErrorTypeOf(*reply), "Unhealthy");
  partial.Close();  // as a client told `Connection: close` does; the server lingers until then
  EXPECT_TRUE(WaitUntil([&] { return !RawHttpClient(port_).connected(); }, 2s));
  EXPECT_FALSE(drained.load());  // still waiting for /hold

  held->Send({200, "text/plain", "held", {}});
  held.reset();
  reply = busy.Read();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->body, "held");
  EXPECT_EQ(reply->Header("connection"), "close");
  drainer.join();
  EXPECT_TRUE(drained.load());
  EXPECT_EQ(server_->open_connections(), 0);
  server_->Drain();  // idempotent
}

TEST_F(EventServerTest, ResponderThatOutlivesTheServerIsHarmless) {
  EventServerOptions options;
  options.drain_timeout = 100ms;
  StartServer(options);
  RawHttpClient client(port_);
  ASSERT_TRUE(client.Send(GetRequest("/hold")));
  std::shared_ptr<Responder> held = routes_.TakeHeld(2s);
  ASSERT_NE(held, nullptr);
  server_.reset();  // drains, gives up on /hold after drain_timeout, closes it
  EXPECT_TRUE(client.ClosedWithin(2s));
  held->Send({200, "text/plain", "too late", {}});  // dropped, not a crash
}

TEST_F(EventServerTest, BindFailsOnAPortInUse) {
  StartServer();
  EventServerOptions options;
  options.host = "127.0.0.1";
  options.port = port_;
  EventServer second(options, [](HttpRequest, std::shared_ptr<Responder>) {});
  absl::StatusOr<int> port = second.Bind();
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find(std::to_string(port_)), std::string::npos)
      << port.status();
  EXPECT_FALSE(second.Start().ok());   // Start before a successful Bind
  EXPECT_FALSE(server_->Bind().ok());  // twice
  EXPECT_FALSE(server_->Start().ok());
}

// The process's resident memory (Linux), in bytes.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Raises the soft RLIMIT_NOFILE toward the hard one; whether `needed` descriptors fit.
bool RaiseFileLimit(rlim_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur < needed && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed;
}

TEST_F(EventServerTest, FloodOfIdleAndSlowConnectionsDoesNotStallARequest) {
  constexpr int kIdle = 1000, kSlow = 20, kProbes = 5;
  // Each connection takes a descriptor on either side (the test is the client too).
  if (!RaiseFileLimit(2 * (kIdle + kSlow) + 200)) {
    GTEST_SKIP() << "RLIMIT_NOFILE is too low for " << kIdle + kSlow << " connections";
  }
  EventServerOptions options;
  options.header_timeout = 1500ms;  // the slow ones' deadline
  StartServer(options);
  const auto probe = [&] {  // the slowest of a few normal requests, in ms
    double worst = 0;
    for (int i = 0; i < kProbes; ++i) {
      const Clock::time_point start = Clock::now();
      std::optional<RawReply> reply = RequestOnce(PostRequest("/probe", R"({"inputs":"x"})"));
      if (!reply || reply->status != 200) return -1.0;
      worst = std::max(worst, MillisSince(start));
    }
    return worst;
  };
  const double quiet_ms = probe();
  ASSERT_GE(quiet_ms, 0);

  const int64_t before = ResidentBytes();
  std::vector<std::unique_ptr<RawHttpClient>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawHttpClient>(port_));
    ASSERT_TRUE(idle.back()->connected()) << i;
  }
  ASSERT_TRUE(WaitUntil([&] { return server_->open_connections() >= kIdle; }, 20s));
  const int64_t per_connection = (ResidentBytes() - before) / kIdle;

  // The slow ones trickle a request line and headers, a byte every 100 ms: 4 s for all of it.
  std::vector<std::unique_ptr<RawHttpClient>> slow;
  for (int i = 0; i < kSlow; ++i) slow.push_back(std::make_unique<RawHttpClient>(port_));
  const std::string trickle = "GET /slow HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaa\r\n\r\n";
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    for (size_t at = 0; at < trickle.size() && !stop; ++at) {
      for (auto& client : slow) client->Send(trickle.substr(at, 1));
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);
  const double flood_ms = probe();
  EXPECT_GE(flood_ms, 0) << "a request was not answered during the flood";
  EXPECT_LT(flood_ms, 2000.0 * kSanitizerSlowdown);
  EXPECT_GE(server_->open_connections(), kIdle);  // the idle ones are still served

  // Closed at their header deadline (1.5 s), answered 408 where the answer can still be read.
  for (auto& client : slow) {
    std::optional<RawReply> reply =
        client->Read(std::chrono::milliseconds(3000 * kSanitizerSlowdown));
    if (reply) {
      EXPECT_EQ(reply->status, 408);
    }
    EXPECT_TRUE(reply.has_value() || client->ClosedWithin(1s));
  }
  stop = true;
  trickler.join();
  std::printf(
      "[ flood    ] %d idle + %d slow connections: slowest of %d requests %.2f ms "
      "(quiet server: %.2f ms); resident memory +%lld bytes per idle connection "
      "(both ends in this process; heap freed by earlier tests is reused, so the figure holds for "
      "this test run alone)\n",
      kIdle, kSlow, kProbes, flood_ms, quiet_ms, static_cast<long long>(per_connection));
}

}  // namespace
}  // namespace padless::serve::http
