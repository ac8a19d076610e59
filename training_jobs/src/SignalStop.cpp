#include "SignalStop.h"

#include <csignal>
#include <ctime>
#include <initializer_list>

namespace mirage::training {
namespace {

volatile std::sig_atomic_t g_signal = 0;
// When the first signal arrived: clock_gettime is async-signal-safe.
timespec g_received{};

extern "C" void on_stop_signal(int signo) {
  if (g_signal != 0) return;
  clock_gettime(CLOCK_MONOTONIC, &g_received);
  g_signal = signo;
}

}  // namespace

void SignalStop::install() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signo : {SIGUSR1, SIGTERM, SIGINT}) sigaction(signo, &action, nullptr);
}

bool SignalStop::requested() {
  return g_signal != 0;
}

const char* SignalStop::signal_name() {
  switch (g_signal) {
    case 0: return "";
    case SIGUSR1: return "SIGUSR1";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "signal";
  }
}

double SignalStop::seconds_since_signal() {
  if (g_signal == 0) return 0;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return double(now.tv_sec - g_received.tv_sec) + 1e-9 * double(now.tv_nsec - g_received.tv_nsec);
}

void SignalStop::reset() {
  g_signal = 0;
}

}  // namespace mirage::training
