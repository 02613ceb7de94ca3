#include "fuzz_util.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace padless::fuzz {

void Fail(const char* file, int line, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s:%d: invariant failed: %s (%s)\n", file, line, what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

uint64_t FuzzInput::Bits(int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(Byte()) << (8 * i);
  return v;
}

int64_t FuzzInput::Range(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  int bytes = 1;
  while (bytes < 8 && (span >> (8 * bytes)) != 0) ++bytes;
  const uint64_t v = Bits(bytes);
  const uint64_t offset = span == UINT64_MAX ? v : v % (span + 1);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
}

absl::string_view FuzzInput::Take(size_t n) {
  n = std::min(n, size_ - pos_);
  absl::string_view s(reinterpret_cast<const char*>(data_) + pos_, n);
  pos_ += n;
  return s;
}

namespace {

// POSIX only: libtorch exports a broken std::filesystem::remove_all, and the model target links it.
void RemoveTree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = dir + "/" + name;
      if (::unlink(path.c_str()) != 0) RemoveTree(path);
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

std::string* scratch_dir = nullptr;

void RemoveScratchDir() {
  if (scratch_dir != nullptr) RemoveTree(*scratch_dir);
}

}  // namespace

const std::string& ScratchDir() {
  if (scratch_dir == nullptr) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/padless_fuzz_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    scratch_dir = new std::string(buf.data());
    std::atexit(RemoveScratchDir);
  }
  return *scratch_dir;
}

std::string WriteScratchFile(const std::string& name, absl::string_view content) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "<unreadable>";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace padless::fuzz
