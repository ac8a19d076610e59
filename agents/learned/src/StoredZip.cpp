#include "StoredZip.h"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace mirage::learned {
namespace {

constexpr std::uint32_t kEndOfDirectory = 0x06054b50, kDirectoryRecord = 0x02014b50,
                        kLocalHeader = 0x04034b50;

std::uint32_t le(const std::string& b, std::size_t at, int bytes) {
  if (at + static_cast<std::size_t>(bytes) > b.size())
    throw std::runtime_error("the zip structure runs past the end of the file");
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

}  // namespace

StoredZip::StoredZip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot be read");
  bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  // The end-of-directory record is the last 22 bytes, followed by a comment of up to 64 KiB.
  if (bytes_.size() < 22) throw std::runtime_error("too short for a zip file");
  std::size_t end = bytes_.size() - 22;
  const std::size_t lowest = end > 0xffff ? end - 0xffff : 0;
  while (le(bytes_, end, 4) != kEndOfDirectory) {
    if (end == lowest) throw std::runtime_error("no zip directory (truncated file?)");
    --end;
  }
  const std::uint32_t count = le(bytes_, end + 10, 2);
  std::size_t at = le(bytes_, end + 16, 4);
  for (std::uint32_t k = 0; k < count; ++k) {
    if (le(bytes_, at, 4) != kDirectoryRecord) throw std::runtime_error("a damaged zip directory");
    const std::size_t name_len = le(bytes_, at + 28, 2), extra_len = le(bytes_, at + 30, 2),
                      comment_len = le(bytes_, at + 32, 2);
    if (at + 46 + name_len > bytes_.size()) throw std::runtime_error("a damaged zip directory");
    entries_[bytes_.substr(at + 46, name_len)] = at;
    at += 46 + name_len + extra_len + comment_len;
  }
}

std::optional<std::string> StoredZip::read(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  const std::size_t record = it->second;
  if (le(bytes_, record + 10, 2) != 0)
    throw std::runtime_error(name + " is compressed; expected it stored, as LibTorch writes it");
  const std::size_t size = le(bytes_, record + 20, 4);
  const std::size_t local = le(bytes_, record + 42, 4);
  if (le(bytes_, local, 4) != kLocalHeader)
    throw std::runtime_error("a damaged zip entry: " + name);
  const std::size_t data = local + 30 + le(bytes_, local + 26, 2) + le(bytes_, local + 28, 2);
  if (data + size > bytes_.size())
    throw std::runtime_error(name + " runs past the end of the file");
  return bytes_.substr(data, size);
}

}  // namespace mirage::learned
