#include "mirage/daemon/slurm/ChildProcess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace mirage::daemon {
namespace {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read.reset(fds[0]);
    write.reset(fds[1]);
    return true;
  }
};

bool write_all(int fd, const std::string& data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// What the child reports through the status pipe when it cannot become the program.
struct StartFailure {
  int chdir_failed;
  int error;
};

[[noreturn]] void child(const ChildProcessSpec& spec, int in, int out, int err, int status,
                        char* const* argv, char* const* envp, const sigset_t& no_signals) {
  // Only async-signal-safe calls from here on: the parent may have other threads.
  ::setpgid(0, 0);
  ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
  StartFailure failure{0, 0};
  if (!spec.work_dir.empty() && ::chdir(spec.work_dir.c_str()) != 0) {
    failure = {1, errno};
  } else {
    ::execve(spec.program.c_str(), argv, envp);
    failure = {0, errno};
  }
  [[maybe_unused]] const ssize_t n = ::write(status, &failure, sizeof failure);
  ::_exit(127);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcessResult run_child_process(const ChildProcessSpec& spec) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + spec.timeout;
  ChildProcessResult r;
  // Standard input from a memory file rather than a pipe: nothing to keep feeding while reading
  // the output, and no SIGPIPE when the child reads only part of it.
  Fd in(::memfd_create("mirage-child-input", MFD_CLOEXEC));
  Pipe out, err, status;
  if (in.get() < 0 || !write_all(in.get(), spec.input) || ::lseek(in.get(), 0, SEEK_SET) != 0 ||
      !out.open() || !err.open() || !status.open()) {
    r.start_errno = errno ? errno : EIO;
    return r;
  }
  // Everything the child needs is made before fork.
  std::vector<std::string> args{spec.program};
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env = spec.environment;
  const auto argv = c_strings(args);
  const auto envp = c_strings(env);
  sigset_t no_signals;
  sigemptyset(&no_signals);

  const pid_t pid = ::fork();
  if (pid < 0) {
    r.start_errno = errno;
    return r;
  }
  if (pid == 0)
    child(spec, in.get(), out.write.get(), err.write.get(), status.write.get(), argv.data(),
          envp.data(), no_signals);
  ::setpgid(pid, pid);  // also here: a timeout right after fork must find the group
  out.write.reset();
  err.write.reset();
  status.write.reset();
  in.reset();

  StartFailure failure{0, 0};
  std::size_t failure_bytes = 0;
  pollfd fds[3] = {
      {out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}, {status.read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_streams = 3;
  while (open_streams > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    const int n = ::poll(fds, 3, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 3 && n > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_streams;
        continue;
      }
      const auto size = static_cast<std::size_t>(got);
      if (i < 2) {
        std::string& sink = *sinks[i];
        if (sink.size() < spec.max_output)
          sink.append(buf, std::min(size, spec.max_output - sink.size()));
      } else if (failure_bytes + size <= sizeof failure) {
        std::memcpy(reinterpret_cast<char*>(&failure) + failure_bytes, buf, size);
        failure_bytes += size;
      }
    }
  }
  int wstatus = 0;
  if (!r.timed_out) {
    // The output is closed; the process normally ends with it, but not necessarily.
    for (;;) {
      const pid_t done = ::waitpid(pid, &wstatus, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno == EINTR) continue;
      if (done < 0) return r;  // reaped elsewhere: how it ended is unknown
      if (Clock::now() >= deadline) {
        r.timed_out = true;
        break;
      }
      ::usleep(5000);
    }
  }
  if (r.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return r;
  }
  if (failure_bytes == sizeof failure) {
    r.start_errno = failure.error;
    r.chdir_failed = failure.chdir_failed != 0;
    return r;
  }
  if (WIFEXITED(wstatus)) r.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) r.signal = WTERMSIG(wstatus);
  return r;
}

}  // namespace mirage::daemon
