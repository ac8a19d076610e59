#pragma once
// Whole-file writes that a reader (or a crash) never sees half done.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace mirage::training {

// Whether a committed file must survive a crash of the machine (fsync of the file and of its
// directory), or only ever be seen whole by readers (the rename alone). Checkpoints and the
// hand-off marker are durable; the progress file, rewritten every few steps by the training loop,
// is not: an fsync on a busy parallel filesystem can take longer than a training step.
enum class Durability { kDurable, kReadersOnly };

// Streams a file into place atomically: the bytes go to a temporary file in the same directory;
// commit() fsyncs it (when durable), renames it over the target and fsyncs the directory (so the
// rename itself survives a crash). Destroyed without commit(), it removes the temporary file.
// Errors throw std::system_error naming the path.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path,
                            Durability durability = Durability::kDurable);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  // Overwrites bytes written earlier (a header completed after its payload).
  void write_at(std::uint64_t offset, std::string_view bytes);
  void commit();

 private:
  std::filesystem::path path_, tmp_;
  Durability durability_;
  int fd_ = -1;
};

// The concatenated `parts`, written with AtomicFileWriter.
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> parts,
                           Durability durability = Durability::kDurable);

// Reads a whole file; throws std::system_error naming the path.
std::string read_file(const std::filesystem::path& path);

}  // namespace mirage::training
