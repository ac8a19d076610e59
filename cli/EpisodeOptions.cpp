#include "EpisodeOptions.h"

#include <fmt/format.h>

#include <algorithm>

#include "TimeFlags.h"
#include "Validators.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/core/Error.h"

namespace mirage::cli {

void EpisodeOptions::add_to(CLI::App& cmd, const std::string& default_every, bool window_required) {
  every = default_every;
  segment.add_to(cmd);
  cmd.add_option("--overlap", overlap, "concurrent or handoff (how overlap is counted)")
      ->check(CLI::IsMember({"concurrent", "handoff"}))
      ->capture_default_str();
  CLI::Option* f = cmd.add_option(
      "--from", from,
      window_required ? "First sample time (YYYY-MM-DD[THH:MM:SS], UTC)"
                      : "First sample time (YYYY-MM-DD[THH:MM:SS], UTC; default: a day into "
                        "the log)");
  CLI::Option* t = cmd.add_option(
      "--to", to,
      window_required ? "Samples before this time"
                      : "Samples before this time (default: the log's last submission)");
  if (window_required) {
    f->required();
    t->required();
  }
  cmd.add_option("--every", every, "Spacing of sample times (e.g. 4h)")->capture_default_str();
  cmd.add_option("--max-wait", max_wait, "Longest wait a segment is allowed before the cut-off")
      ->capture_default_str();
  cmd.add_option("--start", start,
                 "fork: fork a full replay at each sample (queues carry over); peer: Mirage's "
                 "protocol (empty cluster, jobs of [t, t+5d], predecessor at t+2d)")
      ->check(CLI::IsMember({"fork", "peer"}))
      ->capture_default_str();
}

void EpisodeOptions::add_successor_wait_to(CLI::App& cmd, bool both) {
  // A command that can report two worlds reports both by default: the replay is an instrument
  // with known errors, the log's real waits stand beside it.
  if (both) successor_wait = "both";
  const std::string worlds =
      "When a chain's segments start: replay (the calibrated replay's scheduler) or logged (what "
      "the log's real jobs of the segment's shape submitted nearest then waited)";
  cmd.add_option("--successor-wait", successor_wait,
                 both ? worlds + ", or both, side by side" : worlds)
      ->check(both ? CLI::IsMember({"replay", "logged", "both"})
                   : CLI::IsMember({"replay", "logged"}))
      ->capture_default_str()
      ->group("Successor wait");
  cmd.add_option("--logged-window", logged_window,
                 "With logged waits: how far either side of a submission its real jobs may be")
      ->capture_default_str()
      ->group("Successor wait");
  cmd.add_option("--logged-jobs", logged_jobs,
                 "With logged waits: the real jobs nearest a submission whose median wait it "
                 "waits; a submission with fewer within the window drops its sample")
      ->check(whole_number(1, 1000))
      ->capture_default_str()
      ->group("Successor wait");
}

std::vector<SuccessorWait> EpisodeOptions::worlds() const {
  if (successor_wait == "both") return {SuccessorWait::kReplay, SuccessorWait::kLogged};
  if (successor_wait == "logged") return {SuccessorWait::kLogged};
  return {SuccessorWait::kReplay};
}

void EpisodeOptions::apply_logged_waits(EvalConfig& config) const {
  config.logged_window = parse_duration_flag(logged_window, "--logged-window");
  config.logged_jobs = static_cast<std::size_t>(logged_jobs);
}

std::shared_ptr<const Trace> EpisodeOptions::logged_yardstick(const Trace& as_read,
                                                              const ClusterSpec& machine) const {
  const std::vector<SuccessorWait> asked = worlds();
  if (std::find(asked.begin(), asked.end(), SuccessorWait::kLogged) == asked.end()) return nullptr;
  return std::make_shared<const Trace>(yardstick_log(as_read, machine));
}

void EpisodeOptions::apply(EpisodeConfig& episode, const ClusterSpec& machine) const {
  episode.chain.nodes = segment.nodes;
  episode.chain.gpus_per_node = segment.gpus_per_node;
  episode.chain.time_limit = episode.chain.runtime = segment.time_limit();
  episode.chain.overlap = *parse_overlap_mode(overlap);
  episode.max_wait = parse_duration_flag(max_wait, "--max-wait");
  if (segment.nodes > machine.nodes)
    throw InputError({"", 0, "--nodes"},
                     fmt::format("the segment needs {} nodes but the machine has {} "
                                 "(--cluster-nodes)",
                                 segment.nodes, machine.nodes));
  segment.note_old_meaning(machine.nodes);
}

EpisodeStartMode EpisodeOptions::start_mode() const {
  return start == "peer" ? EpisodeStartMode::kPeerWarmup : EpisodeStartMode::kForkReplay;
}

std::optional<Seconds> EpisodeOptions::from_time() const {
  if (from.empty()) return std::nullopt;
  return parse_time_flag(from, "--from");
}

std::optional<Seconds> EpisodeOptions::to_time() const {
  if (to.empty()) return std::nullopt;
  return parse_time_flag(to, "--to");
}

Seconds EpisodeOptions::spacing() const {
  return parse_duration_flag(every, "--every");
}

}  // namespace mirage::cli
