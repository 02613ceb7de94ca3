// Scratch files for the tests of base/: a fresh directory per test (removed with everything in it
// at the end), and reading a file back with the standard library rather than with base/.
#ifndef PADLESS_TESTS_BASE_SCRATCH_DIR_H_
#define PADLESS_TESTS_BASE_SCRATCH_DIR_H_

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace padless::base {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Exists(const std::string& path) { return static_cast<bool>(std::ifstream(path)); }

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/padless_report_", getpid(), "_", name);
}

// A fresh, empty directory for one test, removed with its files and subdirectories at the end.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) : path_(TempPath(name)) {
    Clear(path_);
    ::mkdir(path_.c_str(), 0755);
  }
  ~ScratchDir() {
    Clear(path_);
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries, without "." and "..".
  std::vector<std::string> List() const { return Names(path_); }

 private:
  static std::vector<std::string> Names(const std::string& dir) {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(d);
    }
    return names;
  }
  // Removes what `dir` holds, depth first (remove(3) takes files and empty directories).
  static void Clear(const std::string& dir) {
    for (const std::string& name : Names(dir)) {
      const std::string path = dir + "/" + name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) Clear(path);
      std::remove(path.c_str());
    }
  }
  std::string path_;
};

}  // namespace padless::base

#endif  // PADLESS_TESTS_BASE_SCRATCH_DIR_H_
