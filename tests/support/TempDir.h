#pragma once
// A temporary folder removed with everything in it when the object goes: tests write their files
// there so that no run leaves anything behind in the system's temporary folder.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace mirage::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mirage-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A file of this process's own temporary folder, removed when the test program exits.
inline std::string temp_file(const std::string& name) {
  static const TempDir dir;
  return dir.file(name);
}

}  // namespace mirage::test
