#pragma once
// The training text as bytes, cut into windows of `seq_len + 1` bytes (inputs and next-byte
// targets). The data order is a pure function of (seed, sequence index): sequence k is window
// perm_e(k mod W) of epoch e = k / W, with a per-epoch shuffle from the seed. So the checkpoint's
// data position (sequences consumed so far) restores the order exactly, and any split of a global
// batch across ranks reads the same sequences as one rank with the whole batch.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mirage::training {

class ByteCorpus {
 public:
  // The corpus compiled into the binary (training_jobs/data/corpus.txt).
  static ByteCorpus embedded();
  static ByteCorpus from_file(const std::filesystem::path& path);
  explicit ByteCorpus(std::string bytes, std::string name);

  const std::string& name() const { return name_; }
  std::size_t size() const { return bytes_.size(); }
  // CRC-32 of the bytes: with the size, what says that a checkpoint's data position is this text's.
  std::uint32_t checksum() const;
  // Whole windows of `seq_len + 1` bytes per epoch (windows overlap by one byte).
  std::int64_t windows(int seq_len) const;

  // Fills `count` sequences starting at global sequence index `first` into row-major
  // [count, seq_len] inputs and targets.
  void fill(std::int64_t first, int count, int seq_len, std::uint64_t seed,
            std::vector<std::int64_t>& inputs, std::vector<std::int64_t>& targets) const;

 private:
  const std::vector<std::int64_t>& order(std::int64_t epoch, int seq_len, std::uint64_t seed) const;

  std::string bytes_;
  std::string name_;
  // One epoch's permutation, cached: consecutive steps stay within an epoch.
  mutable std::vector<std::int64_t> order_;
  mutable std::int64_t order_epoch_ = -1;
  mutable int order_seq_len_ = 0;
  mutable std::uint64_t order_seed_ = 0;
};

}  // namespace mirage::training
