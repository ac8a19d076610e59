#pragma once
// A vector whose copies share their elements until written: held in chunks, each shared by the
// copies that have not written to it, and copied on the first write. The simulator's per-job
// records are some 600 KB on a real log, and a fork writes to few of them (the jobs of the days
// it replays), so a fork copies the chunk pointers instead.
#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

namespace mirage {

template <class T>
class SharedChunks {
 public:
  static constexpr std::size_t kChunk = 512;  // elements a chunk

  std::size_t size() const { return size_; }
  const T& operator[](std::size_t i) const { return (*chunks_[i / kChunk])[i % kChunk]; }
  const T& at(std::size_t i) const {
    if (i >= size_) throw std::out_of_range("SharedChunks::at");
    return (*this)[i];
  }
  // The element to write: its chunk copied first where another copy shares it.
  T& mut(std::size_t i) { return own(i / kChunk)[i % kChunk]; }
  void resize(std::size_t n) {
    while (size_ < n) push_back(T{});
  }
  void push_back(const T& v) {
    if (size_ % kChunk == 0) {
      auto chunk = std::make_shared<std::vector<T>>();
      chunk->reserve(kChunk);
      chunks_.push_back(std::move(chunk));
    }
    own(size_ / kChunk).push_back(v);
    ++size_;
  }

 private:
  std::vector<T>& own(std::size_t c) {
    std::shared_ptr<std::vector<T>>& chunk = chunks_[c];
    if (chunk.use_count() != 1) {
      chunk = std::make_shared<std::vector<T>>(*chunk);
    } else {
      // The copies that shared it may have let it go on other threads: their reads happen
      // before this write.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return *chunk;
  }

  std::vector<std::shared_ptr<std::vector<T>>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace mirage
