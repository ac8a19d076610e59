#pragma once
// The entries of a zip file stored without compression, as LibTorch writes the tensors and the
// pickle of its archives. Enough of the format for those files: no zip64, no encryption.
#include <map>
#include <optional>
#include <string>

namespace mirage::learned {

class StoredZip {
 public:
  // Reads the central directory. Throws std::runtime_error saying what is wrong with the file.
  explicit StoredZip(const std::string& path);
  // The entry's bytes; nullopt when there is no such entry. Throws std::runtime_error when it is
  // compressed or runs past the end of the file.
  std::optional<std::string> read(const std::string& name) const;
  const std::map<std::string, std::size_t>& entries() const { return entries_; }

 private:
  std::string bytes_;
  std::map<std::string, std::size_t> entries_;  // name -> offset of its central directory record
};

}  // namespace mirage::learned
