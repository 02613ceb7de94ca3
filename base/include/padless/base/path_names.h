// Path names worked out as text, as std::filesystem::path does it (which this library cannot use:
// see directory.h): the stem of a file name, a path made absolute, one path relative to another.
// None of them looks at the disk, so "." and ".." stay as written and links are not followed;
// AbsolutePath alone reads the current directory.
#ifndef PADLESS_BASE_PATH_NAMES_H_
#define PADLESS_BASE_PATH_NAMES_H_

#include <string>

namespace padless::base {

// The file name of `path` without its extension, as std::filesystem::path::stem:
// "data/imdb_train.tsv" -> "imdb_train", "a.tar.gz" -> "a.tar", ".bashrc" -> ".bashrc",
// ".." -> "..", "dir/" -> "" (no file name).
std::string PathStem(const std::string& path);

// `path` joined to the current directory unless it is absolute already, as
// std::filesystem::absolute: "a/../b" -> "<cwd>/a/../b". "" when `path` is empty or the current
// directory cannot be read.
std::string AbsolutePath(const std::string& path);

// `path` relative to the directory `base`, as std::filesystem::path::lexically_relative: the names
// are compared one by one ("//" counts as "/"), without resolving "." or "..":
// ("/a/b/c.csv", "/a") -> "b/c.csv", ("/a/c", "/a/b") -> "../c", ("/a", "/a") -> ".". "" when no
// such path exists: one of the two is absolute and the other not, or `base` climbs out with more
// ".." than it has names.
std::string RelativePath(const std::string& path, const std::string& base);

}  // namespace padless::base

#endif  // PADLESS_BASE_PATH_NAMES_H_
