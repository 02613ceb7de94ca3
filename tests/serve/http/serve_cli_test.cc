// `padless serve`'s command line: bad values are usage errors (exit 2) with the flag named as
// written, a bad model directory or a port in use a failure (exit 1), all before serving;
// --attention picks the engine's backend.
#include <httplib.h>

#include <string>
#include <vector>

#include "cli_runner.h"
#include "gtest/gtest.h"
#include "serve_fixtures.h"
#include "server_process.h"

namespace padless::serve::testing {
namespace {

using cli::testing::CliResult;
using cli::testing::RunPadless;

using Cases = std::vector<std::pair<std::vector<std::string>, std::string>>;

// Each case's arguments (after `serve`) exit 2 with its message. Split over two tests: each run
// loads LibTorch (about a second).
void ExpectUsageErrors(const Cases& cases) {
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {"serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CliResult r = RunPadless(argv);
    EXPECT_EQ(r.exit_code, 2) << message << "\n" << r.err;
    EXPECT_NE(r.err.find("padless serve: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << message << "\n" << r.err;
  }
}

TEST(ServeCliTest, BadLimitsAreUsageErrors) {
  const std::string model = WriteSmallModelDir("serve_cli");
  ExpectUsageErrors({
      {{}, "--model DIR is required"},
      {{"--model", model, "--port", "70000"}, "--port must be in [0, 65535], got 70000"},
      {{"--model", model, "--max-batch-requests", "0"}, "--max-batch-requests must be >= 1"},
      {{"--model", model, "--max_concurrent_requests", "0"},
       "--max_concurrent_requests must be >= 1"},
      {{"--model", model, "--max-client-batch-size", "64", "--max-concurrent-requests", "8"},
       "a larger batch could never be admitted"},
      {{"--model", model, "--max-batch-tokens", "100", "--max-len", "128"},
       "--max-batch-tokens must be >= --max-len (128)"},
      {{"--model", model, "--max-batch-delay-us", "-1"}, "--max-batch-delay-us must be >= 0"},
      {{"--model", model, "--body-limit", "0"}, "--body-limit must be >= 1"},
      {{"--model", model, "--cuda-graph-max-tokens", "-1"}, "--cuda-graph-max-tokens must be >= 0"},
  });
}

TEST(ServeCliTest, BadNamesAreUsageErrors) {
  const std::string model = WriteSmallModelDir("serve_cli_names");
  ExpectUsageErrors({
      {{"--model", model, "--log-level", "loud"}, "--log-level: unknown log level 'loud'"},
      {{"--model", model, "--amp", "fp4"}, "fp4"},
      {{"--model", model, "--amp", "int4"}, "predict and serve also take int8"},
      {{"--model", model, "--device", "tpu"}, "--device: bad device 'tpu'"},
      {{"--model", model, "--host", ""}, "--host must not be empty"},
      {{"--model", model, "--port", "x"}, "bad value 'x'"},
      {{"--model", model, "stray"}, "unexpected argument 'stray'"},
  });
}

TEST(ServeCliTest, BadModelDirectoryOrBusyPortIsAFailure) {
  CliResult r = RunPadless({"serve", "--model", "/nonexistent/model", "--port", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--model /nonexistent/model"), std::string::npos) << r.err;
  const std::string empty = WriteSmallModelDir("serve_cli_broken");
  cli::testing::WriteFile(empty + "/config.json", "{broken");
  r = RunPadless({"serve", "--model", empty, "--port", "0", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("padless serve: error: "), std::string::npos) << r.err;

  httplib::Server busy;  // holds a port for the length of the test
  const int port = busy.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  r = RunPadless({"serve", "--model", WriteSmallModelDir("serve_cli_port"), "--port",
                  std::to_string(port), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.err;
}

// --attention: a CPU backend serves (the startup line names it); a CUDA-only one is refused on
// the CPU by the engine at load, a failure as the engine's other option conflicts are.
TEST(ServeCliTest, AttentionBackendOnTheCpu) {
  const std::string model = WriteSmallModelDir("serve_cli_attention");
  const CliResult refused = RunPadless(
      {"serve", "--model", model, "--port", "0", "--device", "cpu", "--attention", "fa3"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("padless serve: error: attention fa3: runs on CUDA devices only, not "
                             "on device cpu"),
            std::string::npos)
      << refused.err;
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--model", model, "--port", "0", "--device", "cpu", "--attention",
                            "reference"}))
      << server.log();
  EXPECT_NE(server.log().find(" attention=reference "), std::string::npos) << server.log();
  httplib::Client client("127.0.0.1", server.port());
  const httplib::Result r =
      client.Post("/predict", R"({"inputs": "a good film"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"label\""), std::string::npos) << r->body;
}

TEST(ServeCliTest, HelpListsTheFlags) {
  const CliResult r = RunPadless({"serve", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--max-batch-tokens", "--max-client-batch-size", "--log-level",
                           "--body-limit", "--port", "--device", "--amp", "--attention"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "\n" << r.out;
  }
}

}  // namespace
}  // namespace padless::serve::testing
