#include "mirage/daemon/control/SocketPath.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mirage::daemon {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device file";
  return "a file of unknown type";
}

// 0 when something accepts connections at `path`, else the errno of the failed connect.
int try_connect(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return ENAMETOOLONG;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

SocketPathProbe probe_socket_path(const std::string& path) {
  SocketPathProbe p;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return p;
    p.state = SocketPathState::kOccupied;
    p.what = std::string("something that cannot be inspected (") + std::strerror(errno) + ")";
    return p;
  }
  p.dev = st.st_dev;
  p.ino = st.st_ino;
  if (!S_ISSOCK(st.st_mode)) {
    p.state = SocketPathState::kOccupied;
    p.what = kind_of(st.st_mode);
    return p;
  }
  const int err = try_connect(path);
  if (err == 0) {
    p.state = SocketPathState::kLiveSocket;
    p.what = "a socket that accepts connections";
  } else if (err == ECONNREFUSED) {
    p.state = SocketPathState::kStaleSocket;
    p.what = "a stale socket";
  } else {  // EACCES, EAGAIN (a full backlog: someone listens), ...: cannot tell
    p.state = SocketPathState::kOccupied;
    p.what =
        std::string("a socket whose state cannot be judged (connect: ") + std::strerror(err) + ")";
  }
  return p;
}

std::string occupied_reason(const std::string& path, const SocketPathProbe& probe) {
  return path + " is " + probe.what +
         "; only a stale socket there is replaced (remove it yourself, or choose another "
         "socket.path)";
}

bool remove_stale_socket(const std::string& path, const SocketPathProbe& probe) {
  if (probe.state != SocketPathState::kStaleSocket) return false;
  // Judged again just before unlinking: the file must still be that very socket.
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_dev != probe.dev ||
      st.st_ino != probe.ino)
    return false;
  return ::unlink(path.c_str()) == 0;
}

}  // namespace mirage::daemon
