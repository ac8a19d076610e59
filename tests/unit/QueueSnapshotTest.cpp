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
  // A priority of 0 is what a hold sets, whatever the reason says.
  EXPECT_EQ(classify_pending_reason("Priority", 0), PendingState::kHeld);
  EXPECT_EQ(classify_pending_reason("Dependency", 1200), PendingState::kDependency);
  EXPECT_EQ(classify_pending_reason("QOSMaxNodePerUserLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("QOSMaxJobsPerUserLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("AssocGrpNodeLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("AssocMaxJobsLimit", 1200), PendingState::kLimit);
  EXPECT_EQ(classify_pending_reason("BeginTime", 1200), PendingState::kNotYetEligible);
  EXPECT_EQ(classify_pending_reason("Reservation", 1200), PendingState::kNotYetEligible);
  EXPECT_EQ(classify_pending_reason("ReqNodeNotAvail", 1200), PendingState::kNotYetEligible);
  // A QOS the job may not use is no limit that lifts when work ends.
  EXPECT_EQ(classify_pending_reason("QOSNotAllowed", 1200), PendingState::kEligible);
}

}  // namespace
}  // namespace mirage
