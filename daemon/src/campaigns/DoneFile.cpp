#include "mirage/daemon/campaigns/DoneFile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace mirage::daemon {

namespace fs = std::filesystem;

std::string default_done_file(const std::string& store_path, const std::string& store_id,
                              std::int64_t campaign) {
  const fs::path dir = store_path == ":memory:"
                           ? fs::temp_directory_path() / ("mirage-" + store_id + ".done")
                           : fs::path(store_path + ".done");
  return (dir / ("campaign-" + std::to_string(campaign) + "-" + store_id)).string();
}

std::optional<std::string> prepare_done_file(const std::string& path) {
  if (path.empty() || path.back() == '/') return "'" + path + "' is not a file path";
  const fs::path dir = fs::absolute(path).parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return "cannot create the directory " + dir.string() + ": " + ec.message();
    ::chmod(dir.c_str(), 0700);
  }
  if (!fs::is_directory(dir, ec)) return dir.string() + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot write in " + dir.string() + " (" + std::strerror(errno) + ")";
  if (fs::exists(fs::symlink_status(path, ec)))
    return path + " exists already: a segment would seem to have finished the campaign; " +
           "remove it or name another file";
  return std::nullopt;
}

bool done_file_exists(const std::string& path) {
  return done_file_time(path).has_value();
}

std::optional<std::int64_t> done_file_time(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::int64_t>(st.st_mtime);
}

}  // namespace mirage::daemon
