#include "AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace mirage::training {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path.string());
}

void fsync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory", dir);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  // Some filesystems refuse fsync on directories (EINVAL); the rename is then as durable as
  // that filesystem allows.
  if (rc != 0 && errno != EINVAL) fail("cannot fsync directory", dir);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, Durability durability)
    : path_(std::move(path)), durability_(durability) {
  std::filesystem::path dir = path_.parent_path().empty() ? "." : path_.parent_path();
  tmp_ = dir / ("." + path_.filename().string() + ".tmp." + std::to_string(::getpid()));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create", tmp_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write", tmp_);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicFileWriter::write_at(std::uint64_t offset, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write", tmp_);
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
}

void AtomicFileWriter::commit() {
  const bool durable = durability_ == Durability::kDurable;
  if (durable && ::fsync(fd_) != 0) fail("cannot fsync", tmp_);
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    ::unlink(tmp_.c_str());
    fail("cannot close", tmp_);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp_.c_str());
    errno = saved;
    fail("cannot rename into", path_);
  }
  if (durable) fsync_directory(path_.parent_path().empty() ? "." : path_.parent_path());
}

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> parts, Durability durability) {
  AtomicFileWriter out(path, durability);
  for (std::string_view part : parts) out.write(part);
  out.commit();
}

std::string read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path);
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      fail("cannot read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace mirage::training
