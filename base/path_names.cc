#include "padless/base/path_names.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <vector>

#include "padless/base/file_kind.h"

namespace padless::base {
namespace {

bool IsAbsolute(const std::string& path) { return !path.empty() && path[0] == '/'; }

// The elements of `path` as std::filesystem::path iterates them: "/" for the root, then each name
// (a run of slashes is one separator), then "" when a slash follows the last name.
std::vector<std::string> PathElements(const std::string& path) {
  std::vector<std::string> elements;
  size_t start = 0;
  if (IsAbsolute(path)) {
    elements.push_back("/");
    start = path.find_first_not_of('/');
  }
  while (start != std::string::npos && start < path.size()) {
    const size_t slash = path.find('/', start);
    if (slash == std::string::npos) {
      elements.push_back(path.substr(start));
      break;
    }
    elements.push_back(path.substr(start, slash - start));
    start = path.find_first_not_of('/', slash);
    if (start == std::string::npos) elements.push_back("");
  }
  return elements;
}

// `path` + "/" + `element`, as std::filesystem::path::operator/= for a relative element.
void AppendElement(std::string& path, const std::string& element) {
  if (!path.empty()) path += '/';
  path += element;
}

}  // namespace

std::string PathStem(const std::string& path) {
  const std::vector<std::string> elements = PathElements(path);
  if (elements.empty() || elements.back() == "/") return "";
  const std::string& name = elements.back();
  if (name == "." || name == "..") return name;
  const size_t dot = name.rfind('.');
  // A leading dot starts a hidden file's name, not an extension.
  if (dot == std::string::npos || dot == 0) return name;
  return name.substr(0, dot);
}

std::string AbsolutePath(const std::string& path) {
  if (path.empty() || IsAbsolute(path)) return path;
  std::vector<char> cwd(PATH_MAX);
  while (::getcwd(cwd.data(), cwd.size()) == nullptr) {
    if (errno != ERANGE) return "";
    cwd.resize(cwd.size() * 2);
  }
  return JoinPath(cwd.data(), path);
}

std::string RelativePath(const std::string& path, const std::string& base) {
  if (IsAbsolute(path) != IsAbsolute(base)) return "";
  const std::vector<std::string> to = PathElements(path);
  const std::vector<std::string> from = PathElements(base);
  size_t common = 0;
  while (common < to.size() && common < from.size() && to[common] == from[common]) ++common;
  if (common == to.size() && common == from.size()) return ".";
  // How many directories `base` goes down below the common part: each one is a ".." to climb.
  int climbs = 0;
  for (size_t i = common; i < from.size(); ++i) {
    if (from[i] == "..") {
      --climbs;
    } else if (!from[i].empty() && from[i] != ".") {
      ++climbs;
    }
  }
  if (climbs < 0) return "";
  if (climbs == 0 && (common == to.size() || to[common].empty())) return ".";
  std::string relative;
  for (int i = 0; i < climbs; ++i) AppendElement(relative, "..");
  for (size_t i = common; i < to.size(); ++i) AppendElement(relative, to[i]);
  return relative;
}

}  // namespace padless::base
