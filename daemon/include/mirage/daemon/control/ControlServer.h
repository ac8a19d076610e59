#pragma once
// The control socket: a Unix stream socket (mode 0600, in a 0700 directory) served by the
// daemon's Asio loop. Each peer's uid is read with SO_PEERCRED and must be the daemon's own.
// Newline-delimited requests, one reply line each; a line longer than the limit, or a peer idle
// past the timeout, gets an error reply and is disconnected, and the server goes on serving
// everyone else. At max_clients the longest-idle peer, else the one whose request stalled
// longest, is disconnected to admit a new one; while every peer is mid-request and sending, one
// more is admitted to answer a status or a ping, so that hung clients never lock out `mirage
// status`.
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mirage::daemon {

struct ControlServerLimits {
  std::size_t max_request_bytes = 8 << 20;  // as DaemonConfig's
  int max_clients = 32;
  std::int64_t idle_timeout_s = 60;
  // A request begun and then silent this long makes room at the cap (a client writes a request
  // at once: a pause this long is a client that hangs).
  std::int64_t stalled_request_ms = 2000;
};

class ControlServer {
 public:
  // Returns the reply line (without '\n') to a request line from a peer with uid `uid`.
  using Handler = std::function<std::string(const std::string& line, std::uint32_t uid)>;

  ControlServer(boost::asio::io_context& io, std::string path, ControlServerLimits limits,
                Handler handler);
  ~ControlServer();

  // Binds and listens. Replaces only a provably stale socket (SocketPath.h); refuses
  // (std::runtime_error naming the path and what is there) anything else at the path.
  void start();
  // Closes, and removes the socket file if it is still the one start() bound.
  void stop();

  const std::string& path() const { return path_; }
  int clients() const { return *clients_; }
  std::uint64_t rejected() const { return *rejected_; }

 private:
  class Session;
  // Where a new client goes: a place under the cap, the one kept for a status, or nowhere.
  enum class Room { kRegular, kReserve, kNone };
  void do_accept();
  void on_accept(const boost::system::error_code& ec,
                 boost::asio::local::stream_protocol::socket socket);
  Room make_room();

  boost::asio::io_context& io_;
  std::string path_;
  ControlServerLimits limits_;
  std::shared_ptr<const Handler> handler_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<int> clients_ = std::make_shared<int>(0);
  std::shared_ptr<std::uint64_t> rejected_ = std::make_shared<std::uint64_t>(0);
  std::vector<std::weak_ptr<Session>> sessions_;  // admitted clients, for make_room()
  std::optional<std::pair<dev_t, ino_t>> bound_;  // the socket file start() made
  bool stopped_ = false;
};

// A blocking client for the CLI and the tests: sends one request line, reads one reply line.
// Throws ControlClientError (with a message saying what to do) when the daemon cannot be reached.
class ControlClientError : public std::runtime_error {
 public:
  explicit ControlClientError(const std::string& what, bool request_sent = false)
      : std::runtime_error(what), request_sent_(request_sent) {}
  // The whole request went out and no answer came back: the daemon may have carried it out.
  bool request_sent() const { return request_sent_; }

 private:
  bool request_sent_;
};
std::string control_request(const std::string& socket_path, const std::string& line,
                            int timeout_ms = 30000);

}  // namespace mirage::daemon
