#include "mirage/daemon/service/StoreControl.h"

#include <filesystem>
#include <optional>

#include "campaigns/CancelsNotTaken.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/service/CampaignPass.h"
#include "mirage/daemon/store/StoreLock.h"

namespace mirage::daemon {

nlohmann::json serve_on_store(const DaemonConfig& config, const nlohmann::json& request,
                              std::uint32_t peer_uid, SlurmClient& client, const Clock& clock,
                              double lock_wait_s) {
  make_private_dir(std::filesystem::path(config.store_path).parent_path());
  std::string held_by;
  std::optional<StoreLock> lock =
      StoreLock::acquire(config.store_path, "mirage campaign", lock_wait_s, &held_by);
  if (!lock)
    throw StoreBusyError("store " + config.store_path + " is in use by " + held_by +
                         " and its control socket " + config.socket_path + " does not answer");
  CampaignPass pass(config, clock);
  ControlHandler::Hooks hooks;
  std::vector<CancelNotTaken> not_cancelled;
  hooks.perform = [&](Actions a) {
    for (auto& n : perform_actions_reporting(pass.controller(), client, a))
      not_cancelled.push_back(n);
  };
  hooks.poke = [] {};  // the next tick makes the pass
  hooks.status = [&] { return nlohmann::json{{"store", config.store_path}, {"daemon", false}}; };
  ControlHandler handler(pass.controller(), pass.store(), hooks);
  auto reply = nlohmann::json::parse(handler.handle(request.dump(), peer_uid));
  if (!reply.value("ok", false)) throw RequestError(reply.value("error", std::string("failed")));
  // The campaign is cancelled, but these jobs may still hold their nodes: the user is told.
  for (const auto& n : not_cancelled)
    reply["not_cancelled"].push_back(
        {{"job", n.action.job}, {"segment", n.action.segment}, {"error", n.why}});
  return reply;
}

}  // namespace mirage::daemon
