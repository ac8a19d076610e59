#include "mirage/core/QueueSnapshot.h"

namespace mirage {

std::string_view to_string(PendingState state) {
  switch (state) {
    case PendingState::kEligible: return "eligible";
    case PendingState::kHeld: return "held";
    case PendingState::kDependency: return "dependency";
    case PendingState::kLimit: return "limit";
    case PendingState::kNotYetEligible: return "not yet eligible";
  }
  return "?";
}

PendingState classify_pending_reason(std::string_view reason, std::optional<double> priority) {
  if (priority && *priority == 0) return PendingState::kHeld;  // what a hold sets
  if (reason.starts_with("JobHeld") || reason == "Held") return PendingState::kHeld;
  if (reason.starts_with("Dependency") || reason == "DependencyNeverSatisfied")
    return PendingState::kDependency;
  // Association and QOS limits (AssocGrpNodeLimit, AssocMaxJobsLimit, QOSMaxNodePerUserLimit,
  // QOSGrpCpuLimit, ...): the job waits for its owner's or its group's work to end. Not
  // "QOSNotAllowed" or "InvalidQOS", which never start, nor partition limits, which Slurm reports
  // only for jobs that could never run there.
  if ((reason.starts_with("Assoc") || reason.starts_with("QOS")) && reason.ends_with("Limit"))
    return PendingState::kLimit;
  if (reason == "BeginTime" || reason == "Reservation" || reason == "PartitionDown" ||
      reason == "PartitionInactive" || reason == "ReqNodeNotAvail" || reason == "NodeDown")
    return PendingState::kNotYetEligible;
  return PendingState::kEligible;
}

}  // namespace mirage
