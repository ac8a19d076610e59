#include "store/PathChecks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace mirage::daemon {
namespace {

namespace fs = std::filesystem;

bool is_sqlite(const std::string& path) {
  static constexpr char kMagic[] = "SQLite format 3";  // with its '\0': the 16-byte header
  char head[sizeof kMagic] = {};
  std::ifstream f(path, std::ios::binary);
  f.read(head, sizeof head);
  return f.gcount() == static_cast<std::streamsize>(sizeof head) &&
         std::equal(head, head + sizeof head, kMagic);
}

}  // namespace

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  const auto ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  const auto cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

std::optional<std::string> directory_problem(const fs::path& dir) {
  const fs::path start = dir.empty() ? fs::path(".") : dir;
  fs::path existing = start;
  std::error_code ec;
  while (!fs::exists(existing, ec)) {
    const fs::path up = existing.has_parent_path() ? existing.parent_path() : fs::path(".");
    if (up == existing) break;
    existing = up;
  }
  const std::string why = existing == start ? "" : start.string() + " cannot be created: ";
  if (!fs::is_directory(existing, ec)) return why + existing.string() + " is not a directory";
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    return why + "the directory " + existing.string() + " is not writable (" +
           std::strerror(errno) + ")";
  return std::nullopt;
}

std::optional<std::string> hard_link_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink <= 1)
    return std::nullopt;
  return path + " has " + std::to_string(st.st_nlink) +
         " hard links: two processes could each lock it under another name; keep one name "
         "(remove the other links, or replace them with symlinks)";
}

std::optional<std::string> store_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return path + " is a directory, not a database file";
    if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
    if (::access(path.c_str(), R_OK | W_OK) != 0)
      return path + " is not readable and writable (" + std::strerror(errno) + ")";
    if (st.st_size > 0 && !is_sqlite(path))
      return path + " is not a SQLite database; refusing to use it as the store";
    if (auto why = hard_link_problem(path)) return why;
  } else if (errno != ENOENT) {
    return path + " cannot be inspected (" + std::strerror(errno) + ")";
  }
  // SQLite makes its WAL and shared-memory files beside the database.
  if (auto why = directory_problem(fs::path(path).parent_path())) return why;
  return std::nullopt;
}

}  // namespace mirage::daemon
