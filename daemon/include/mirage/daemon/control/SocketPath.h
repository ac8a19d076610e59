#pragma once
// What sits at the control socket's path, judged without changing anything: the daemon removes
// a file there only when it is provably a stale socket of ours (a socket, not a symlink, and a
// connect is refused), so that a user's file, a live daemon's socket or the store is never lost.
#include <sys/types.h>

#include <string>

namespace mirage::daemon {

enum class SocketPathState {
  kFree,         // nothing there
  kStaleSocket,  // a socket nobody listens on (connect: ECONNREFUSED): safe to replace
  kLiveSocket,   // a socket that accepts connections: another daemon
  kOccupied,     // anything else, or a socket whose state cannot be judged: never touched
};

struct SocketPathProbe {
  SocketPathState state = SocketPathState::kFree;
  std::string what;  // for messages: "a regular file", "a symbolic link", ...
  dev_t dev = 0;     // identity of the file judged, so that only that file is removed
  ino_t ino = 0;
};

SocketPathProbe probe_socket_path(const std::string& path);

// Why an occupied `path` is refused: "PATH is a regular file; only a stale socket ...".
std::string occupied_reason(const std::string& path, const SocketPathProbe& probe);

// Removes `path` only if it is still the stale socket `probe` judged; false otherwise.
bool remove_stale_socket(const std::string& path, const SocketPathProbe& probe);

}  // namespace mirage::daemon
