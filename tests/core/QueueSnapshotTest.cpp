// What slurmctld's pending reasons mean for a plan of the queue.
#include <gtest/gtest.h>

#include "mirage/core/QueueSnapshot.h"

namespace mirage {
namespace {

TEST(PendingReason, JobsWaitingTheirTurnCompete) {
  for (const char* reason : {"Priority", "Resources", "None", "", "SomethingNew"})
    EXPECT_EQ(classify_pending_reason(reason, 1500), PendingState::kEligible) << reason;
}

TEST(PendingReason, HoldsDependenciesAndLimitsAreNamed) {
  EXPECT_EQ(classify_pending_reason("JobHeldUser", 0), PendingState::kHeld);
  EXPECT_EQ(classify_pending_reason("JobHeldAdmin", std::nullopt), PendingState::kHeld);
  // Without a reason, a priority of 0 is what a hold sets.
  EXPECT_EQ(classify_pending_reason("", 0), PendingState::kHeld);
  EXPECT_EQ(classify_pending_reason("", 10), PendingState::kEligible);
  EXPECT_EQ(classify_pending_reason("Dependency", 1200), PendingState::kDependency);
  EXPECT_EQ(classify_pending_reason("QOSMaxNodePerUserLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("QOSMaxJobsPerUserLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("AssocGrpNodeLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("AssocMaxJobsLimit", 1200), PendingState::kLimit);
  // The GPU limits sites use most, and limits per account.
  EXPECT_EQ(classify_pending_reason("QOSGrpGRES", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("QOSMaxGRESPerUser", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("AssocGrpGRES", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("MaxNodePerAccount", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("JobArrayTaskLimit", 1200), PendingState::kLimit);
  // A per-job limit never lifts as the owner's work ends; nor does a QOS the job may not use.
  EXPECT_EQ(classify_pending_reason("QOSMaxNodePerJobLimit", 1200), PendingState::kNever);
  EXPECT_EQ(classify_pending_reason("QOSNotAllowed", 1200), PendingState::kNever);
  EXPECT_EQ(classify_pending_reason("BadConstraints", 1200), PendingState::kNever);
  EXPECT_EQ(classify_pending_reason("DependencyNeverSatisfied", 1200), PendingState::kNever);
  EXPECT_EQ(classify_pending_reason("BeginTime", 1200), PendingState::kNotYetEligible);
  EXPECT_EQ(classify_pending_reason("Reservation", 1200), PendingState::kNotYetEligible);
  EXPECT_EQ(classify_pending_reason("ReqNodeNotAvail", 1200), PendingState::kNotYetEligible);
}

}  // namespace
}  // namespace mirage
