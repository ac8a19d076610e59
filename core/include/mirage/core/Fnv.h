#pragma once
// FNV-1a, 64 bits: the fingerprints of probe caches and the digest of a model's weights. Not for
// security; stable across builds and machines, so that a cache or digest written once still
// matches.
#include <cstddef>
#include <cstdint>

namespace mirage {

struct Fnv1a {
  std::uint64_t h = 1469598103934665603ull;
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  template <class T>
  void add(const T& v) {
    add(&v, sizeof v);
  }
};

}  // namespace mirage
