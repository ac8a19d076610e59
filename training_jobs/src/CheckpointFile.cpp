#include "CheckpointFile.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <system_error>

#include "AtomicFile.h"

namespace mirage::training {
namespace {

constexpr char kMagic[8] = {'M', 'I', 'R', 'A', 'G', 'E', 'C', 'K'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 32;
constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".mgc";

std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes) {
  uLong c = crc;
  // zlib takes uInt lengths: feed large pieces in chunks.
  while (!bytes.empty()) {
    std::size_t n = std::min<std::size_t>(bytes.size(), std::numeric_limits<uInt>::max());
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<std::uint32_t>(c);
}

std::uint32_t crc32_of(std::string_view bytes) {
  return crc32_update(0, bytes);
}

template <typename T>
void put_le(char* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

template <typename T>
T get_le(const char* in) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return value;
}

std::string header_for(std::uint64_t length, std::uint32_t payload_crc) {
  std::string header(kHeaderSize, '\0');
  std::memcpy(header.data(), kMagic, sizeof kMagic);
  put_le<std::uint32_t>(header.data() + 8, kVersion);
  put_le<std::uint32_t>(header.data() + 12, kHeaderSize);
  put_le<std::uint64_t>(header.data() + 16, length);
  put_le<std::uint32_t>(header.data() + 24, payload_crc);
  put_le<std::uint32_t>(header.data() + 28, crc32_of(std::string_view(header).substr(0, 28)));
  return header;
}

struct Header {
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
};

// Checks the header against the file's size; the payload CRC is left to the caller.
Header parse_header(std::string_view bytes, std::uint64_t file_size) {
  if (file_size < kHeaderSize || bytes.size() < kHeaderSize) {
    throw CheckpointError("truncated: " + std::to_string(file_size) + " bytes, no full header");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    throw CheckpointError("not a mirage checkpoint (bad magic)");
  }
  if (get_le<std::uint32_t>(bytes.data() + 28) != crc32_of(bytes.substr(0, 28))) {
    throw CheckpointError("header checksum mismatch");
  }
  auto version = get_le<std::uint32_t>(bytes.data() + 8);
  if (version != kVersion) {
    throw CheckpointUnreadable("format version " + std::to_string(version) + ", this build reads " +
                               std::to_string(kVersion));
  }
  Header h{get_le<std::uint64_t>(bytes.data() + 16), get_le<std::uint32_t>(bytes.data() + 24)};
  if (get_le<std::uint32_t>(bytes.data() + 12) != kHeaderSize ||
      file_size - kHeaderSize != h.length) {
    throw CheckpointError("truncated or padded: header says " + std::to_string(h.length) +
                          " payload bytes, file has " + std::to_string(file_size - kHeaderSize));
  }
  return h;
}

// pread until `n` bytes or the end of the file.
std::size_t read_at(int fd, std::uint64_t pos, void* buf, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r =
        ::pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(pos + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw CheckpointUnreadable("cannot read: " + std::string(std::strerror(errno)));
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

std::optional<std::int64_t> step_of(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoll(digits);
}

// The entries of `dir`, none where it does not exist. Any other failure (permissions, a shared
// filesystem's error) throws: taken as an empty directory, it would start training again at
// step 0 beside the checkpoints it could not see.
std::vector<std::filesystem::directory_entry> entries_of(const std::filesystem::path& dir) {
  std::vector<std::filesystem::directory_entry> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return out;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) out.push_back(*it);
  if (ec)
    throw CheckpointUnreadable("cannot list checkpoint directory " + dir.string() + ": " +
                               ec.message());
  return out;
}

}  // namespace

std::string checkpoint_file_name(std::int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "ckpt-%012lld.mgc", static_cast<long long>(step));
  return buf;
}

std::string checkpoint_header(std::string_view payload) {
  return header_for(payload.size(), crc32_of(payload));
}

std::string decode_checkpoint_file(std::string_view bytes) {
  Header h = parse_header(bytes, bytes.size());
  std::string_view payload = bytes.substr(kHeaderSize);
  if (crc32_of(payload) != h.crc) throw CheckpointError("payload checksum mismatch (corrupted)");
  return std::string(payload);
}

CheckpointDir::CheckpointDir(std::filesystem::path dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(1, keep)) {}

std::filesystem::path CheckpointDir::write(
    std::int64_t step, const std::function<void(const PayloadSink&)>& produce) const {
  std::filesystem::create_directories(dir_);
  std::filesystem::path file = dir_ / checkpoint_file_name(step);
  AtomicFileWriter out(file);
  out.write(std::string(kHeaderSize, '\0'));  // completed once the payload is known
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
  produce([&](std::string_view piece) {
    out.write(piece);
    crc = crc32_update(crc, piece);
    length += piece.size();
  });
  out.write_at(0, header_for(length, crc));
  out.commit();
  std::vector<CheckpointEntry> all;
  try {
    all = list();
  } catch (const CheckpointUnreadable&) {
    // The new checkpoint is safely on disk: the older ones go at the next write instead.
  }
  // Older than the newest `keep_`, and never the file just written.
  for (std::size_t i = static_cast<std::size_t>(keep_); i < all.size(); ++i) {
    if (all[i].step < step) {
      std::error_code ignored;
      std::filesystem::remove(all[i].path, ignored);
    }
  }
  return file;
}

std::filesystem::path CheckpointDir::write(std::int64_t step, std::string_view payload) const {
  return write(step, [&](const PayloadSink& sink) { sink(payload); });
}

std::vector<CheckpointEntry> CheckpointDir::list() const {
  std::vector<CheckpointEntry> out;
  for (const auto& entry : entries_of(dir_)) {
    if (!entry.is_regular_file()) continue;
    if (auto step = step_of(entry.path().filename().string())) {
      out.push_back({*step, entry.path()});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  return out;
}

PayloadReader CheckpointDir::open_payload(const std::filesystem::path& file) {
  int raw = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) throw CheckpointUnreadable("cannot open: " + std::string(std::strerror(errno)));
  // Shared by the reader's copies; closed with the last one.
  std::shared_ptr<int> fd(new int(raw), [](int* p) {
    ::close(*p);
    delete p;
  });
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(file, ec);
  if (ec) throw CheckpointUnreadable("cannot stat: " + ec.message());
  std::string header(kHeaderSize, '\0');
  header.resize(read_at(*fd, 0, header.data(), kHeaderSize));
  const Header h = parse_header(header, file_size);

  std::vector<char> chunk(std::size_t{4} << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t pos = 0; pos < h.length;) {
    std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), h.length - pos));
    std::size_t got = read_at(*fd, kHeaderSize + pos, chunk.data(), want);
    if (got != want) throw CheckpointError("truncated while reading");
    crc = crc32_update(crc, std::string_view(chunk.data(), got));
    pos += got;
  }
  if (crc != h.crc) throw CheckpointError("payload checksum mismatch (corrupted)");

  return {h.length, [fd, length = h.length](std::uint64_t pos, void* buf, std::size_t n) {
            if (pos >= length) return std::size_t{0};
            n = static_cast<std::size_t>(std::min<std::uint64_t>(n, length - pos));
            return read_at(*fd, kHeaderSize + pos, buf, n);
          }};
}

std::string CheckpointDir::read_payload(const std::filesystem::path& file) {
  std::string bytes;
  try {
    bytes = read_file(file);
  } catch (const std::system_error& e) {
    throw CheckpointUnreadable(e.what());
  }
  return decode_checkpoint_file(bytes);
}

std::vector<std::filesystem::path> CheckpointDir::quarantined() const {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : entries_of(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".corrupt") && step_of(name.substr(0, name.size() - 8))) {
      out.push_back(entry.path());
    }
  }
  return out;
}

void CheckpointDir::quarantine(const std::filesystem::path& file) {
  std::error_code ignored;
  std::filesystem::rename(file, file.string() + ".corrupt", ignored);
}

void CheckpointDir::remove_stale_temporaries() const {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(".ckpt-") && name.find(".tmp.") != std::string::npos) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    }
  }
}

}  // namespace mirage::training
