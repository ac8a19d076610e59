#include "Sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace mirage::fuzz {
namespace {

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(125);  // the parent is gone
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Frames: tag, 4-byte length (host order: same machine), text.
std::vector<Message> parse_frames(const std::string& bytes) {
  std::vector<Message> out;
  std::size_t i = 0;
  while (i + 5 <= bytes.size()) {
    std::uint32_t length;
    std::memcpy(&length, bytes.data() + i + 1, 4);
    if (i + 5 + length > bytes.size()) break;  // cut off by a crash
    out.push_back({bytes[i], bytes.substr(i + 5, length)});
    i += 5 + length;
  }
  return out;
}

}  // namespace

Outcome run_sandboxed(const std::function<void(const Report&)>& check, int timeout_ms,
                      std::size_t memory_bytes) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    if (memory_bytes > 0) {
      const rlimit limit{memory_bytes, memory_bytes};
      setrlimit(RLIMIT_AS, &limit);
    }
    const int out = fds[1];
    check([out](char tag, std::string_view text) {
      const auto length = static_cast<std::uint32_t>(text.size());
      char head[5] = {tag};
      std::memcpy(head + 1, &length, 4);
      write_all(out, head, 5);
      write_all(out, text.data(), text.size());
    });
    _exit(0);  // not exit(): the parent's buffered output must not be flushed twice
  }
  ::close(fds[1]);
  Outcome outcome;
  std::string bytes;
  const auto deadline = t0 + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // timeout: the deadline check above ends the loop
    char buf[65536];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the child is done
    bytes.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  outcome.messages = parse_frames(bytes);
  if (timed_out) {
    outcome.end = Outcome::End::kTimedOut;
  } else if (WIFSIGNALED(status)) {
    outcome.end = Outcome::End::kSignalled;
    outcome.code = WTERMSIG(status);
  } else {
    outcome.code = WEXITSTATUS(status);
  }
  return outcome;
}

}  // namespace mirage::fuzz
