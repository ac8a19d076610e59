#include "mirage/daemon/service/Tick.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "mirage/daemon/service/CampaignPass.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::daemon {

namespace {

// The most decide passes one tick makes on its dump.
constexpr int kMostPasses = 20;
// When the latest ticks on this store made their passes (seconds since the epoch,
// comma-separated, the newest last).
constexpr const char* kTickPassesKey = "tick.recent_passes";
// The gaps between as many passes count: a tick run by hand between two of scrontab's is one
// short gap among them.
constexpr std::size_t kTickGapsKept = 8;

// The longest gap between the latest passes, the one ending now included; records this pass.
std::optional<Seconds> longest_recent_tick_gap(CampaignStore& store, Seconds now) {
  std::vector<Seconds> passes;
  std::stringstream kept(store.value(kTickPassesKey));
  for (std::string t; std::getline(kept, t, ',');) {
    try {
      passes.push_back(std::stoll(t));
    } catch (const std::exception&) {  // not a number: left out
    }
  }
  passes.push_back(now);
  if (passes.size() > kTickGapsKept + 1)
    passes.erase(passes.begin(), passes.end() - kTickGapsKept - 1);
  store.set_value(kTickPassesKey, fmt::format("{}", fmt::join(passes, ",")));
  std::optional<Seconds> longest;
  for (std::size_t i = 1; i < passes.size(); ++i)
    longest = std::max(longest.value_or(0), std::max<Seconds>(0, passes[i] - passes[i - 1]));
  return longest;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool holder_makes_pass(const std::string& held_by) {
  return ends_with(held_by, "(mirage daemon)") || ends_with(held_by, "(mirage tick)");
}

TickResult run_tick(const DaemonConfig& config, SlurmClient& client, const Clock& clock,
                    const WaitUntil& wait_until, double request_wait_s) {
  TickResult result;
  make_private_dir(std::filesystem::path(config.store_path).parent_path());
  // No wait for a daemon or a tick: the pass under way is this one's. A `campaign` command makes
  // no pass and lets go after its request.
  std::optional<StoreLock> lock =
      StoreLock::acquire(config.store_path, "mirage tick", 0, &result.held_by);
  if (!lock && ends_with(result.held_by, "(mirage campaign)")) {
    result.waited_s = request_wait_s;
    lock = StoreLock::acquire(config.store_path, "mirage tick", request_wait_s, &result.held_by);
  }
  if (!lock) {
    result.holder_passes = holder_makes_pass(result.held_by);
    return result;
  }
  result.held_by.clear();
  result.ran = true;
  CampaignPass pass(config, clock);
  CampaignController& controller = pass.controller();
  const Seconds locked_at = clock.now();
  if (const auto gap = longest_recent_tick_gap(pass.store(), locked_at))
    controller.observe_tick_interval(*gap);
  if (controller.unresolved() > 0) wait_until(locked_at + controller.config().reconcile_delay);

  const std::uint64_t submits_before = client.counters().submits;
  const JobDump dump = client.load_jobs(0);
  if (dump.controller_ahead) controller.observe_controller_clock(*dump.controller_ahead);
  pass.apply_partitions(client.load_partitions());
  pass.set_jobs(dump.jobs);
  Actions actions = pass.decide(dump.taken, true);
  // The lock file deleted or replaced while the pass decided: another process may act on the
  // store now. What was decided is left undone: its intents settle by their tags next time.
  auto still_locked = [&] {
    if (const auto why = lock->lost())
      throw std::runtime_error(*why + " while this tick held it: another process may act on " +
                               config.store_path + " now, so this tick stops without acting");
  };
  still_locked();
  // And before each call: a submission takes seconds, and the lock may go between two.
  const ActionGuard may_act = [&] { return lock->lost(); };
  perform_actions(controller, client, actions, may_act);
  still_locked();
  // Accounting's answers on segments that left the queue unseen, and the runs found for segments
  // about to be submitted (a restored store's), are settled in further passes on the same dump: a
  // tick that only asked would leave every decision to the next one (and a run found and not
  // adopted before the process ends would be looked for again, not submitted). Each pass adopts
  // one run of a campaign, so the passes are as many as the segments that ran unseen in a row.
  bool asked = !actions.lookups.empty();
  for (int passes = 1; passes < kMostPasses && (asked || controller.earlier_runs_waiting() > 0);
       ++passes) {
    Actions more = pass.decide(dump.taken, false);
    still_locked();
    perform_actions(controller, client, more, may_act);
    still_locked();
    asked = false;  // answers asked in a further pass wait for the next tick
    actions.append(std::move(more));
  }

  // Not the submit actions: one whose segment had already run unseen is adopted, not submitted.
  result.submitted = client.counters().submits - submits_before;
  result.signalled = actions.signals.size();
  result.cancelled = actions.cancels.size();
  result.released = actions.releases.size();
  result.unresolved = controller.unresolved();
  for (const auto* r : controller.campaigns())
    if (!is_finished(r->state)) ++result.campaigns;
  return result;
}

}  // namespace mirage::daemon
