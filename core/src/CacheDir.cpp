#include "mirage/core/CacheDir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "mirage/core/Fnv.h"

namespace mirage {

std::string user_cache_dir(const std::string& sub) {
  namespace fs = std::filesystem;
  fs::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    base = fs::path(xdg) / "mirage";
  else if (const char* home = std::getenv("HOME"); home && *home == '/')
    base = fs::path(home) / ".cache" / "mirage";
  else
    base = fs::temp_directory_path() / ("mirage-cache-" + std::to_string(::getuid()));
  const fs::path dir = sub.empty() ? base : base / sub;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      throw std::runtime_error("cannot create the cache directory " + dir.string() + ": " +
                               ec.message());
    ::chmod(base.c_str(), 0700);
  }
  return dir.string();
}

std::string cache_name_for(const std::string& path, const std::string& suffix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string absolute = fs::absolute(path, ec).lexically_normal().string();
  Fnv1a h;
  h.add(absolute.data(), absolute.size());
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h.h));
  return fs::path(path).filename().string() + "." + digest + suffix;
}

}  // namespace mirage
