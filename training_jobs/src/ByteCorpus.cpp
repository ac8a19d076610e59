#include "ByteCorpus.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "AtomicFile.h"
#include "EmbeddedCorpus.h"

namespace mirage::training {
namespace {

// splitmix64: a fixed, portable generator, so the data order is the same with any standard
// library (std::shuffle's algorithm is unspecified).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

ByteCorpus ByteCorpus::embedded() {
  return ByteCorpus(std::string(embedded_corpus()), "embedded:corpus.txt");
}

ByteCorpus ByteCorpus::from_file(const std::filesystem::path& path) {
  return ByteCorpus(read_file(path), path.string());
}

ByteCorpus::ByteCorpus(std::string bytes, std::string name)
    : bytes_(std::move(bytes)), name_(std::move(name)) {}

std::uint32_t ByteCorpus::checksum() const {
  uLong crc = crc32(0, nullptr, 0);
  // zlib takes uInt lengths: a large corpus goes in pieces.
  for (std::size_t at = 0; at < bytes_.size();) {
    const std::size_t n =
        std::min<std::size_t>(bytes_.size() - at, std::numeric_limits<uInt>::max());
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes_.data() + at), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<std::uint32_t>(crc);
}

std::int64_t ByteCorpus::windows(int seq_len) const {
  if (seq_len < 1) return 0;
  return static_cast<std::int64_t>(bytes_.size() > 0 ? (bytes_.size() - 1) / seq_len : 0);
}

const std::vector<std::int64_t>& ByteCorpus::order(std::int64_t epoch, int seq_len,
                                                   std::uint64_t seed) const {
  if (epoch == order_epoch_ && seq_len == order_seq_len_ && seed == order_seed_) return order_;
  std::int64_t n = windows(seq_len);
  order_.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order_[static_cast<std::size_t>(i)] = i;
  std::uint64_t state = seed * 0x100000001b3ULL + static_cast<std::uint64_t>(epoch);
  for (std::int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(i + 1));
    std::swap(order_[static_cast<std::size_t>(i)], order_[static_cast<std::size_t>(j)]);
  }
  order_epoch_ = epoch;
  order_seq_len_ = seq_len;
  order_seed_ = seed;
  return order_;
}

void ByteCorpus::fill(std::int64_t first, int count, int seq_len, std::uint64_t seed,
                      std::vector<std::int64_t>& inputs, std::vector<std::int64_t>& targets) const {
  const std::int64_t n = windows(seq_len);
  if (n < 1) {
    throw std::invalid_argument("corpus " + name_ + " (" + std::to_string(bytes_.size()) +
                                " bytes) is shorter than one sequence of " +
                                std::to_string(seq_len + 1) + " bytes");
  }
  inputs.resize(static_cast<std::size_t>(count) * seq_len);
  targets.resize(inputs.size());
  for (int row = 0; row < count; ++row) {
    std::int64_t k = first + row;
    std::int64_t window = order(k / n, seq_len, seed)[static_cast<std::size_t>(k % n)];
    std::size_t start = static_cast<std::size_t>(window) * seq_len;
    for (int t = 0; t < seq_len; ++t) {
      std::size_t out = static_cast<std::size_t>(row) * seq_len + t;
      inputs[out] = static_cast<unsigned char>(bytes_[start + t]);
      targets[out] = static_cast<unsigned char>(bytes_[start + t + 1]);
    }
  }
}

}  // namespace mirage::training
