#pragma once
// The chain and the sampling window that `mirage eval` and `mirage train` share: the chain's
// shape (nodes, GPUs, time, overlap mode), the window of sample times and their spacing, the
// cut-off, and how each sample starts (fork or peer). One set of flags, parsed in one place.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "SegmentFlags.h"
#include "mirage/agents/Episode.h"
#include "mirage/agents/EpisodeStarts.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/core/ClusterSpec.h"
#include "mirage/traces/Trace.h"

namespace mirage::cli {

struct EpisodeOptions {
  SegmentFlags segment;
  std::string overlap = "concurrent";
  std::string from, to;
  std::string every;  // the command's default
  std::string max_wait = "2d";
  std::string start = "fork";
  std::string successor_wait = "replay";
  std::string logged_window = "3d";
  int logged_jobs = 5;

  // `every` is the command's default spacing; a required window makes --from and --to required.
  void add_to(CLI::App& cmd, const std::string& default_every, bool window_required);
  // Which world decides when segments start (--successor-wait) and how the logged one is made;
  // `both` only where the command can report two worlds side by side (train learns in one).
  void add_successor_wait_to(CLI::App& cmd, bool both = true);
  // The worlds asked for, the replay first; and the logged world's settings into `config`.
  std::vector<SuccessorWait> worlds() const;
  void apply_logged_waits(EvalConfig& config) const;
  // The log the logged world reads its real waits from (yardstick_log in LoggedWaits.h) where a
  // world asked for is the logged one, else null: taken from the trace as read, before the
  // replay's calibration marks its own dependencies, so that eval and train share one logged world.
  std::shared_ptr<const Trace> logged_yardstick(const Trace& as_read,
                                                const ClusterSpec& machine) const;
  // The chain (checked against the machine) and the cut-off into `episode`.
  void apply(EpisodeConfig& episode, const ClusterSpec& machine) const;
  EpisodeStartMode start_mode() const;
  // The window: --from and --to, each else none (only where the window is not required).
  std::optional<Seconds> from_time() const;
  std::optional<Seconds> to_time() const;
  Seconds spacing() const;
};

}  // namespace mirage::cli
