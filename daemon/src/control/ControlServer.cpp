#include "mirage/daemon/control/ControlServer.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mirage/daemon/control/SocketPath.h"

namespace mirage::daemon {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

namespace {

std::string error_line(const std::string& message) {
  return nlohmann::json{{"ok", false}, {"error", message}}.dump() + "\n";
}

}  // namespace

// One peer: read a line, answer it, read the next; an idle timer closes a silent peer. The line is
// gathered by hand, not with read_until, so that the server knows when the peer last sent a byte.
class ControlServer::Session : public std::enable_shared_from_this<Session> {
 public:
  using Clock = std::chrono::steady_clock;

  // A `reserve` session was admitted over the cap: it answers one status or ping and hangs up.
  Session(local::socket socket, std::uint32_t uid, const ControlServerLimits& limits,
          std::shared_ptr<const Handler> handler, std::shared_ptr<int> clients, bool reserve)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        chunk_(std::min<std::size_t>(limits.max_request_bytes + 1, 64 * 1024)),
        uid_(uid),
        limits_(limits),
        handler_(std::move(handler)),
        clients_(std::move(clients)),
        reserve_(reserve) {
    ++*clients_;
  }
  ~Session() { --*clients_; }

  void start() {
    arm_timer();
    read_more();
  }

  // Says why and hangs up.
  void refuse(const std::string& why) {
    auto self = shared_from_this();
    closing_ = true;
    timer_.cancel();
    reply_ = error_line(why);
    asio::async_write(socket_, asio::buffer(reply_),
                      [self](const boost::system::error_code&, std::size_t) { self->close(); });
  }

  // Waiting for a request with nothing of one received: it may be hung up on to make room.
  bool idle() const { return !closing_ && !writing_ && line_.empty(); }
  // Mid-request, with no byte for `stalled_request_ms`: also hung up on to make room.
  bool stalled(Clock::time_point now) const {
    return !closing_ && !writing_ && !line_.empty() &&
           now - last_byte_ >= std::chrono::milliseconds(limits_.stalled_request_ms);
  }
  bool closing() const { return closing_; }
  bool reserve() const { return reserve_; }
  Clock::time_point last_active() const { return last_active_; }
  Clock::time_point last_byte() const { return last_byte_; }

 private:
  void read_more() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(chunk_), [self](const boost::system::error_code& ec,
                                                         std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(const boost::system::error_code& ec, std::size_t n) {
    if (closing_) return;  // refused: the refusal's write hangs up
    if (ec) {
      close();  // eof, reset, or closed by the idle timer
      return;
    }
    last_byte_ = Clock::now();
    line_.append(chunk_.data(), n);
    next_line();
  }

  // Answers the next whole line received, or reads on.
  void next_line() {
    for (auto nl = line_.find('\n', scanned_); nl != std::string::npos; nl = line_.find('\n')) {
      if (nl > limits_.max_request_bytes) break;
      std::string line = line_.substr(0, nl);
      line_.erase(0, nl + 1);
      scanned_ = 0;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank: no answer
      answer(line);
      return;
    }
    scanned_ = line_.size();  // a long request is searched for its newline once
    if (line_.size() > limits_.max_request_bytes) {
      spdlog::warn("control socket: request over {} bytes from uid {}; disconnected",
                   limits_.max_request_bytes, uid_);
      refuse("request too large (over " + std::to_string(limits_.max_request_bytes) +
             " bytes without a newline)");
      return;
    }
    read_more();
  }

  void answer(const std::string& line) {
    if (reserve_ && !is_status_request(line)) {
      refuse("too many clients (socket.max_clients = " + std::to_string(limits_.max_clients) +
             "): only status and ping are answered until one leaves");
      return;
    }
    reply_ = (*handler_)(line, uid_) + "\n";
    auto self = shared_from_this();
    arm_timer();
    writing_ = true;
    asio::async_write(socket_, asio::buffer(reply_),
                      [self](const boost::system::error_code& wec, std::size_t) {
                        self->writing_ = false;
                        self->last_active_ = Clock::now();
                        if (wec || self->reserve_) {
                          self->close();
                          return;
                        }
                        self->arm_timer();  // the next request has the whole idle timeout
                        self->next_line();
                      });
  }

  static bool is_status_request(const std::string& line) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("op") || !j.at("op").is_string()) return false;
    const auto& op = j.at("op").get_ref<const std::string&>();
    return op == "status" || op == "ping";
  }

  void arm_timer() {
    timer_.expires_after(std::chrono::seconds(limits_.idle_timeout_s));
    std::weak_ptr<Session> weak = shared_from_this();
    timer_.async_wait([weak](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->close();
    });
  }

  void close() {
    closing_ = true;
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(local::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  local::socket socket_;
  asio::steady_timer timer_;
  std::vector<char> chunk_;
  std::string line_;         // received, not yet answered: part of a request, or more than one
  std::size_t scanned_ = 0;  // line_ holds no newline before this
  std::uint32_t uid_;
  ControlServerLimits limits_;
  std::shared_ptr<const Handler> handler_;
  std::shared_ptr<int> clients_;
  bool reserve_;
  std::string reply_;
  bool writing_ = false;
  bool closing_ = false;
  Clock::time_point last_active_ = Clock::now();
  Clock::time_point last_byte_ = Clock::now();
};

ControlServer::ControlServer(asio::io_context& io, std::string path, ControlServerLimits limits,
                             Handler handler)
    : io_(io),
      path_(std::move(path)),
      limits_(limits),
      handler_(std::make_shared<const Handler>(std::move(handler))),
      acceptor_(io) {}

ControlServer::~ControlServer() {
  stop();
}

void ControlServer::start() {
  namespace fs = std::filesystem;
  const fs::path p(path_);
  if (path_.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error("socket.path is too long for a Unix socket (" + path_ + ")");
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec)
      throw std::runtime_error("cannot create " + p.parent_path().string() + ": " + ec.message());
  }
  // Only a provably stale socket (a killed daemon's) is replaced; whatever else is there (a
  // user's file, the store, a live daemon) is left alone and the start refused.
  const SocketPathProbe probe = probe_socket_path(path_);
  if (probe.state == SocketPathState::kLiveSocket)
    throw std::runtime_error("another mirage daemon (or another program) is already serving " +
                             path_ + " (socket.path): it accepts connections");
  if (probe.state == SocketPathState::kOccupied)
    throw std::runtime_error("refusing to use socket.path: " + occupied_reason(path_, probe));
  if (probe.state == SocketPathState::kStaleSocket && !remove_stale_socket(path_, probe))
    throw std::runtime_error("cannot replace the stale socket " + path_ +
                             " (it changed while being checked, or: " + std::strerror(errno) + ")");
  // Created 0600 from the start (umask), so no other user can connect in between.
  const mode_t old = ::umask(0177);
  boost::system::error_code ec;
  acceptor_.open(local(), ec);
  if (!ec) acceptor_.bind(local::endpoint(path_), ec);
  ::umask(old);
  if (ec) throw std::runtime_error("cannot bind the control socket " + path_ + ": " + ec.message());
  ::chmod(path_.c_str(), 0600);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) bound_ = {st.st_dev, st.st_ino};
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + path_ + ": " + ec.message());
  spdlog::info("control socket {} (mode 0600)", path_);
  do_accept();
}

void ControlServer::stop() {
  if (stopped_ || !acceptor_.is_open()) return;
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  // Only our own socket: whatever has replaced it since is someone else's.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && bound_ &&
      bound_->first == st.st_dev && bound_->second == st.st_ino)
    ::unlink(path_.c_str());
}

void ControlServer::do_accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, local::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void ControlServer::on_accept(const boost::system::error_code& ec, local::socket socket) {
  if (ec == asio::error::operation_aborted || stopped_) return;
  if (ec) {
    spdlog::warn("control socket: accept failed: {}", ec.message());
    do_accept();
    return;
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  const bool known =
      ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
  if (!known || cred.uid != ::geteuid()) {
    ++*rejected_;
    spdlog::warn("control socket: refused a peer with uid {} (pid {}); only uid {} may connect",
                 known ? static_cast<long>(cred.uid) : -1L,
                 known ? static_cast<long>(cred.pid) : -1L, ::geteuid());
    std::make_shared<Session>(std::move(socket), known ? cred.uid : UINT32_MAX, limits_, handler_,
                              clients_, false)
        ->refuse("permission denied: this daemon serves uid " + std::to_string(::geteuid()));
    do_accept();
    return;
  }
  const Room room = make_room();
  auto session = std::make_shared<Session>(std::move(socket), cred.uid, limits_, handler_, clients_,
                                           room == Room::kReserve);
  if (room == Room::kNone) {
    ++*rejected_;
    spdlog::warn(
        "control socket: {} clients, all mid-request, and one more waiting for status; "
        "refused one",
        limits_.max_clients);
    session->refuse(
        "too many clients (socket.max_clients = " + std::to_string(limits_.max_clients) + ")");
  } else {
    sessions_.push_back(session);
    session->start();
  }
  do_accept();
}

// At the cap, a client that holds its place without a request under way makes room: the
// longest-idle one (connected, nothing sent), else the one whose request stalled longest (part of
// a line, then nothing for stalled_request_ms). Clients that send a byte and hang cannot lock out
// `mirage status`: while their requests are fresh, one more client is admitted over the cap to
// answer a status or a ping.
ControlServer::Room ControlServer::make_room() {
  std::erase_if(sessions_, [](const std::weak_ptr<Session>& w) {
    const auto s = w.lock();
    return !s || s->closing();
  });
  std::shared_ptr<Session> idle, stalled, reserve;
  int regular = 0;
  const auto now = Session::Clock::now();
  for (const auto& w : sessions_) {
    const auto s = w.lock();
    if (!s) continue;
    if (s->reserve()) {
      reserve = s;
      continue;
    }
    ++regular;
    if (s->idle() && (!idle || s->last_active() < idle->last_active())) idle = s;
    if (s->stalled(now) && (!stalled || s->last_byte() < stalled->last_byte())) stalled = s;
  }
  if (regular < limits_.max_clients) return Room::kRegular;
  const std::string cap = "socket.max_clients (" + std::to_string(limits_.max_clients) + ")";
  if (idle) {
    spdlog::info("control socket: {} clients; hung up on the longest idle to admit a new one",
                 limits_.max_clients);
    idle->refuse("disconnected: idle while the daemon was at " + cap +
                 " and another client connected");
    return Room::kRegular;
  }
  if (stalled) {
    spdlog::info("control socket: {} clients; hung up on a stalled request to admit a new one",
                 limits_.max_clients);
    stalled->refuse("disconnected: the request stopped coming while the daemon was at " + cap +
                    " and another client connected");
    return Room::kRegular;
  }
  if (!reserve) return Room::kReserve;
  if (reserve->idle() || reserve->stalled(now)) {
    reserve->refuse("disconnected: no status request came while the daemon was at " + cap +
                    " and another client connected");
    return Room::kReserve;
  }
  return Room::kNone;
}

std::string control_request(const std::string& socket_path, const std::string& line,
                            int timeout_ms) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ControlClientError(std::string("socket: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path)
    throw ControlClientError("socket path too long: " + socket_path);
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED)
      throw ControlClientError("the mirage daemon is not running (no daemon answers at " +
                               socket_path +
                               "); start it with `systemctl --user start mirage` or `mirage "
                               "daemon --config FILE`");
    throw ControlClientError("cannot connect to the mirage daemon at " + socket_path + ": " +
                             std::strerror(err));
  }
  std::string out = line + "\n";
  const char* p = out.data();
  std::size_t left = out.size();
  // A daemon that refuses us (another user, too many clients) answers and closes at once, maybe
  // before our request is sent: then the send fails, but its answer is waiting to be read.
  std::string send_error;
  while (left > 0) {
    const ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      send_error = std::string("sending to the daemon failed: ") + std::strerror(errno);
      break;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (reply.find('\n') == std::string::npos) {
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
    if (left_ms <= 0)
      throw ControlClientError("the mirage daemon did not answer in time", send_error.empty());
    pollfd pfd{fd, POLLIN, 0};
    const int pr = ::poll(&pfd, 1, static_cast<int>(left_ms));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!send_error.empty()) throw ControlClientError(send_error);
      throw ControlClientError(
          std::string("reading from the daemon failed: ") + std::strerror(errno), true);
    }
    if (n == 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  const auto nl = reply.find('\n');
  if (nl == std::string::npos)
    throw ControlClientError(
        send_error.empty() ? "the mirage daemon closed the connection" : send_error,
        send_error.empty());
  return reply.substr(0, nl);
}

}  // namespace mirage::daemon
