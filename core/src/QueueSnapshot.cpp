#include "mirage/core/QueueSnapshot.h"

namespace mirage {

std::string_view to_string(PendingState state) {
  switch (state) {
    case PendingState::kEligible: return "eligible";
    case PendingState::kHeld: return "held";
    case PendingState::kDependency: return "dependency";
    case PendingState::kLimit: return "limit";
    case PendingState::kNotYetEligible: return "not yet eligible";
    case PendingState::kNever: return "cannot run as asked";
  }
  return "?";
}

PendingState classify_pending_reason(std::string_view reason, std::optional<double> priority) {
  if (reason.empty())
    return priority && *priority == 0 ? PendingState::kHeld : PendingState::kEligible;
  if (reason.starts_with("JobHeld") || reason == "Held") return PendingState::kHeld;
  if (reason.starts_with("Dependency"))
    return reason == "DependencyNeverSatisfied" ? PendingState::kNever : PendingState::kDependency;
  const auto has = [&](std::string_view part) {
    return reason.find(part) != std::string_view::npos;
  };
  // Association and QOS limits (QOSMaxNodePerUserLimit, QOSGrpGRES, AssocGrpNodeLimit,
  // MaxJobsPerAccount, ...): the job waits for its owner's or its group's work to end. A per-job
  // limit (QOSMaxNodePerJobLimit, ...) never lifts that way.
  const bool accounting = reason.starts_with("QOSGrp") || reason.starts_with("QOSMax") ||
                          reason.starts_with("AssocGrp") || reason.starts_with("AssocMax") ||
                          (reason.starts_with("Max") && has("PerAccount")) ||
                          reason == "AccountingPolicy" || reason == "JobArrayTaskLimit" ||
                          reason == "QOSJobLimit" || reason == "QOSResourceLimit" ||
                          reason == "AssociationJobLimit" || reason == "AssociationResourceLimit";
  if (accounting) return has("PerJob") ? PendingState::kNever : PendingState::kLimit;
  if (reason == "QOSNotAllowed" || reason == "InvalidQOS" || reason == "InvalidAccount" ||
      reason == "BadConstraints" || reason == "PartitionTimeLimit" ||
      reason == "PartitionNodeLimit" || reason == "PartitionConfig" ||
      reason == "AccountNotAllowed")
    return PendingState::kNever;
  if (reason == "BeginTime" || reason == "Reservation" || reason == "PartitionDown" ||
      reason == "PartitionInactive" || reason == "ReqNodeNotAvail" || reason == "NodeDown" ||
      reason.starts_with("ReqNodeNotAvail"))
    return PendingState::kNotYetEligible;
  return PendingState::kEligible;
}

}  // namespace mirage
