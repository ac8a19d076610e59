#pragma once
// A record per user id, as the simulator keeps running work and fairshare usage: the trace's users,
// numbered 1..n by to_sim_jobs, in a vector (the scheduler looks them up for every pending job of
// every pass); any other id, such as a campaign's own jobs, in a map.
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mirage {

template <class T>
class PerUser {
 public:
  // Ids 1..dense go in the vector.
  explicit PerUser(std::uint32_t dense = 0) : dense_(dense + 1), made_(dense + 1, 0) {}

  // The record of `user`, made empty if it had none; the second: whether it was made now.
  std::pair<T*, bool> try_emplace(std::uint32_t user) {
    if (user < dense_.size()) {
      const bool fresh = !made_[user];
      if (fresh) {
        made_[user] = 1;
        ++count_;
      }
      return {&dense_[user], fresh};
    }
    auto [it, fresh] = other_.try_emplace(user);
    count_ += fresh;
    return {&it->second, fresh};
  }
  T& operator[](std::uint32_t user) { return *try_emplace(user).first; }
  // The record of `user`, or nullptr if it has none.
  const T* find(std::uint32_t user) const {
    if (user < dense_.size()) return made_[user] ? &dense_[user] : nullptr;
    const auto it = other_.find(user);
    return it == other_.end() ? nullptr : &it->second;
  }
  T* find(std::uint32_t user) {
    return const_cast<T*>(static_cast<const PerUser&>(*this).find(user));
  }
  // Drops the record of `user`, if it has one.
  void erase(std::uint32_t user) {
    if (user < dense_.size()) {
      if (made_[user]) {
        made_[user] = 0;
        dense_[user] = T{};
        --count_;
      }
      return;
    }
    count_ -= other_.erase(user);
  }
  // How many users have a record.
  std::size_t size() const { return count_; }
  template <class F>
  void for_each(F&& f) {
    for (std::size_t u = 0; u < dense_.size(); ++u)
      if (made_[u]) f(dense_[u]);
    for (auto& [id, record] : other_) f(record);
  }

 private:
  std::vector<T> dense_;
  std::vector<char> made_;
  std::unordered_map<std::uint32_t, T> other_;
  std::size_t count_ = 0;
};

}  // namespace mirage
