#pragma once
// The checkpoint files of one training campaign, in one directory, independent of what the
// payload holds. Each file is `ckpt-<step>.mgc`:
//
//   offset  size  field
//        0     8  magic "MIRAGECK"
//        8     4  format version (1), little endian
//       12     4  header size (32)
//       16     8  payload length in bytes
//       24     4  CRC-32 of the payload
//       28     4  CRC-32 of bytes 0..27
//       32     n  payload (the trainer's LibTorch archive)
//
// A file whose size, header CRC or payload CRC does not match is rejected, so a truncated or
// corrupted checkpoint is never loaded; the previous one is used instead.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mirage::training {

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The file could not be read (an I/O error, on a shared filesystem often passing) or is of
// another format version: it may well be sound, so it is neither moved aside nor passed over.
struct CheckpointUnreadable : CheckpointError {
  using CheckpointError::CheckpointError;
};

struct CheckpointEntry {
  std::int64_t step = 0;
  std::filesystem::path path;
};

std::string checkpoint_file_name(std::int64_t step);

// The 32-byte header for `payload`.
std::string checkpoint_header(std::string_view payload);
// The payload of a whole file's bytes; throws CheckpointError saying what is wrong.
std::string decode_checkpoint_file(std::string_view file_bytes);

// Random access to a payload, the form LibTorch's archive reader takes, so that a large
// checkpoint is never held in memory twice.
struct PayloadReader {
  std::uint64_t size = 0;
  std::function<std::size_t(std::uint64_t pos, void* buf, std::size_t n)> read;
};

// Receives the payload in pieces as it is produced.
using PayloadSink = std::function<void(std::string_view)>;

class CheckpointDir {
 public:
  // `keep`: how many of the newest checkpoints survive each write (at least 1).
  explicit CheckpointDir(std::filesystem::path dir, int keep = 3);

  const std::filesystem::path& path() const { return dir_; }

  // Writes atomically (temp file, fsync, rename, fsync of the directory) what `produce` passes
  // to its sink, streamed, then removes the checkpoints older than the `keep` newest. Returns the
  // new file's path.
  std::filesystem::path write(std::int64_t step,
                              const std::function<void(const PayloadSink&)>& produce) const;
  std::filesystem::path write(std::int64_t step, std::string_view payload) const;

  // All `ckpt-<step>.mgc` files, newest first (unverified). Both lists are empty where the
  // directory does not exist and throw CheckpointUnreadable where it cannot be listed.
  std::vector<CheckpointEntry> list() const;
  // The checkpoints moved aside by `quarantine`.
  std::vector<std::filesystem::path> quarantined() const;

  // Verifies one checkpoint (size, header, payload CRC, read in chunks) and opens its payload;
  // throws CheckpointError (CheckpointUnreadable where the file may be sound).
  static PayloadReader open_payload(const std::filesystem::path& file);
  // The verified payload as bytes (small files, tests).
  static std::string read_payload(const std::filesystem::path& file);

  // Moves a rejected checkpoint aside (`<name>.corrupt`) so it is kept for a post-mortem but
  // never considered again.
  static void quarantine(const std::filesystem::path& file);

  // Removes temporary files that a killed writer left behind.
  void remove_stale_temporaries() const;

 private:
  std::filesystem::path dir_;
  int keep_;
};

}  // namespace mirage::training
