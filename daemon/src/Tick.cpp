#include "mirage/daemon/Tick.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "mirage/daemon/CampaignPass.h"
#include "mirage/daemon/StoreLock.h"

namespace mirage::daemon {

TickResult run_tick(const DaemonConfig& config, SlurmClient& client, const Clock& clock,
                    const WaitUntil& wait_until) {
  TickResult result;
  make_private_dir(std::filesystem::path(config.store_path).parent_path());
  // No wait: a tick that finds the store busy has nothing to add to the pass under way.
  std::optional<StoreLock> lock =
      StoreLock::acquire(config.store_path, "mirage tick", 0, &result.held_by);
  if (!lock) return result;
  result.ran = true;
  CampaignPass pass(config, clock);
  CampaignController& controller = pass.controller();
  const Seconds locked_at = clock.now();
  if (controller.unresolved() > 0) wait_until(locked_at + controller.config().reconcile_delay);

  const JobDump dump = client.load_jobs(0);
  pass.apply_partitions(client.load_partitions());
  pass.set_jobs(dump.jobs);
  Actions actions = pass.decide(dump.taken, true);
  perform_actions(controller, client, actions);
  // Accounting's answers on segments that left the queue unseen are settled in a second pass on
  // the same dump: a tick that only asked would leave every decision to the next one.
  if (!actions.lookups.empty()) {
    Actions more = pass.decide(dump.taken, false);
    perform_actions(controller, client, more);
    actions.append(std::move(more));
  }

  result.submitted = actions.submits.size();
  result.signalled = actions.signals.size();
  result.cancelled = actions.cancels.size();
  result.released = actions.releases.size();
  result.unresolved = controller.unresolved();
  for (const auto* r : controller.campaigns())
    if (!is_finished(r->state)) ++result.campaigns;
  return result;
}

}  // namespace mirage::daemon
