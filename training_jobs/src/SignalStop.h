#pragma once
// Turns SIGUSR1 (Slurm's --signal and the mirage daemon's hand-off), SIGTERM (Slurm's time limit,
// scancel) and SIGINT into a flag the training loop reads between steps. The handler only sets
// the flag: the step in flight finishes, then the trainer checkpoints and exits 0.

namespace mirage::training {

class SignalStop {
 public:
  // Installs the handlers (SA_RESTART, so blocking calls inside LibTorch and gloo are not cut).
  static void install();
  static bool requested();
  // "SIGUSR1", "SIGTERM", ... or "" when none.
  static const char* signal_name();
  // Seconds since the first signal arrived (CLOCK_MONOTONIC), or 0 when none.
  static double seconds_since_signal();
  // Clears the flag (tests).
  static void reset();
};

}  // namespace mirage::training
