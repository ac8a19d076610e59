#include "mirage/daemon/store/SnapshotBlob.h"

#include <zlib.h>

#include <cstring>

#include "store/Sqlite.h"

namespace mirage::daemon {
namespace {

struct Writer {
  std::vector<unsigned char> out;
  template <typename T>
  void put(T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
};

struct Reader {
  const std::vector<unsigned char>& in;
  std::size_t pos = 0;
  template <typename T>
  T get() {
    if (pos + sizeof(T) > in.size()) throw sql::StoreError("a stored snapshot is truncated");
    T v;
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

constexpr std::uint32_t kSnapshotMagic = 0x4d534e31;  // "MSN1"

}  // namespace

std::vector<unsigned char> encode_snapshot_blob(const QueueSnapshot& q) {
  Writer w;
  w.put<std::int64_t>(q.time);
  w.put<std::int32_t>(q.total_nodes);
  w.put<std::int32_t>(q.gpus_per_node);
  w.put<double>(q.recent_mean_wait_s);
  w.put<std::int32_t>(q.recent_starts);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(q.pending.size()));
  w.put<std::uint32_t>(static_cast<std::uint32_t>(q.running.size()));
  for (const auto& p : q.pending) {
    w.put<std::int64_t>(p.time_limit);
    w.put<std::int32_t>(p.nodes);
    w.put<std::int32_t>(p.gpus_per_node);
    w.put<std::int64_t>(p.waited);
  }
  for (const auto& r : q.running) {
    w.put<std::int64_t>(r.time_limit);
    w.put<std::int32_t>(r.nodes);
    w.put<std::int32_t>(r.gpus_per_node);
    w.put<std::int64_t>(r.waited);
    w.put<std::int64_t>(r.run);
  }
  // Last, so that blobs stored before it existed read as having none.
  w.put<std::uint32_t>(static_cast<std::uint32_t>(q.recent_runtime_shares.size()));
  for (const float share : q.recent_runtime_shares) w.put<float>(share);
  // zlib: queues repeat themselves (same limits and sizes), so history stays small on disk.
  uLongf packed_size = compressBound(static_cast<uLong>(w.out.size()));
  std::vector<unsigned char> blob(12 + packed_size);
  const std::uint32_t magic = kSnapshotMagic;
  const std::uint64_t raw_size = w.out.size();
  std::memcpy(blob.data(), &magic, 4);
  std::memcpy(blob.data() + 4, &raw_size, 8);
  if (compress2(blob.data() + 12, &packed_size, w.out.data(), static_cast<uLong>(w.out.size()),
                Z_BEST_SPEED) != Z_OK)
    throw sql::StoreError("cannot compress a snapshot");
  blob.resize(12 + packed_size);
  return blob;
}

QueueSnapshot decode_snapshot_blob(const std::vector<unsigned char>& blob) {
  if (blob.size() < 12) throw sql::StoreError("a stored snapshot is truncated");
  std::uint32_t magic;
  std::uint64_t raw_size;
  std::memcpy(&magic, blob.data(), 4);
  std::memcpy(&raw_size, blob.data() + 4, 8);
  if (magic != kSnapshotMagic || raw_size > (1ULL << 32))
    throw sql::StoreError("a stored snapshot has an unknown format");
  std::vector<unsigned char> raw(raw_size);
  uLongf size = static_cast<uLongf>(raw_size);
  if (uncompress(raw.data(), &size, blob.data() + 12, static_cast<uLong>(blob.size() - 12)) !=
          Z_OK ||
      size != raw_size)
    throw sql::StoreError("a stored snapshot is corrupt");
  Reader r{raw};
  QueueSnapshot q;
  q.time = r.get<std::int64_t>();
  q.total_nodes = r.get<std::int32_t>();
  q.gpus_per_node = r.get<std::int32_t>();
  q.recent_mean_wait_s = r.get<double>();
  q.recent_starts = r.get<std::int32_t>();
  const auto np = r.get<std::uint32_t>(), nr = r.get<std::uint32_t>();
  if (static_cast<std::uint64_t>(np) * 24 + static_cast<std::uint64_t>(nr) * 32 > raw.size())
    throw sql::StoreError("a stored snapshot is corrupt");
  q.pending.resize(np);
  for (auto& p : q.pending) {
    p.time_limit = r.get<std::int64_t>();
    p.nodes = r.get<std::int32_t>();
    p.gpus_per_node = r.get<std::int32_t>();
    p.waited = r.get<std::int64_t>();
  }
  q.running.resize(nr);
  for (auto& x : q.running) {
    x.time_limit = r.get<std::int64_t>();
    x.nodes = r.get<std::int32_t>();
    x.gpus_per_node = r.get<std::int32_t>();
    x.waited = r.get<std::int64_t>();
    x.run = r.get<std::int64_t>();
  }
  if (r.pos == raw.size()) return q;  // stored before the recent runtimes were
  const auto ns = r.get<std::uint32_t>();
  if (static_cast<std::uint64_t>(ns) * sizeof(float) > raw.size() - r.pos)
    throw sql::StoreError("a stored snapshot is corrupt");
  q.recent_runtime_shares.resize(ns);
  for (float& share : q.recent_runtime_shares) share = r.get<float>();
  return q;
}

}  // namespace mirage::daemon
