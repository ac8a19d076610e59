#pragma once
// perform_actions that also says which cancels Slurm did not take: a request served on the store
// (no daemon) answers a user, who must not believe a job gone that still holds its nodes.
#include <string>
#include <vector>

#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

struct CancelNotTaken {
  CancelAction action;
  std::string why;
};

// As perform_actions with the controller on this thread; returns the cancels that failed (their
// jobs may still run: the next pass cancels them again).
std::vector<CancelNotTaken> perform_actions_reporting(CampaignController& controller,
                                                      SlurmClient& client, const Actions& actions,
                                                      const ActionGuard& may_act = {});

}  // namespace mirage::daemon
