// Writes tests/serve's tiny model directory (serve_fixtures.h) and prints its path: the Python
// server test (server_requests_test.py) serves it without building a model of its own.
#include <cstdio>

#include "serve_fixtures.h"

int main() {
  const std::string dir = padless::serve::testing::WriteSmallModelDir("python_requests");
  std::printf("%s\n", dir.c_str());
  return 0;
}
