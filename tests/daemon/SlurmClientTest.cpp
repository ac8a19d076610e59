// The job tag, the TRES parsing and libslurm's errors at the Slurm seam.
#include <gtest/gtest.h>

#include "mirage/daemon/slurm/SlurmClient.h"
#if MIRAGE_HAVE_LIBSLURM
#include <slurm/slurm_errno.h>

#include "mirage/daemon/slurm/LibSlurmClient.h"
#endif

namespace mirage::daemon {
namespace {

TEST(JobTag, RoundTrips) {
  const JobTag tag{"0a1b2c3d", 42, 3, 2};
  EXPECT_EQ(tag.str(), "mirage:0a1b2c3d:42:3:2");
  const auto back = JobTag::parse(tag.str());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, tag);
}

TEST(JobTag, RejectsWhatIsNotATag) {
  for (const char* text : {"", "mirage:", "mirage:abc:1:2", "mirage:zz:1:2:3", "mirage:ab:1:2:3:4",
                           "mirage:ab:0:1:1", "mirage:ab:1:-1:1", "mirage:ab:1:1:0",
                           "other:ab:1:1:1", "mirage:ab:1:1:1 ", "mirage:ab:x:1:1"})
    EXPECT_FALSE(JobTag::parse(text).has_value()) << text;
}

TEST(Tres, NodeLimitsByIdOrName) {
  EXPECT_EQ(parse_node_limit(""), 0);
  EXPECT_EQ(parse_node_limit("4=2"), 2);
  EXPECT_EQ(parse_node_limit("1=64,4=3"), 3);
  EXPECT_EQ(parse_node_limit("cpu=64,node=5"), 5);
  EXPECT_EQ(parse_node_limit("1=64,14=4"), 0);  // a CPU and a GPU limit, no node limit
  EXPECT_EQ(tighter_limit(0, 3), 3);
  EXPECT_EQ(tighter_limit(4, 3), 3);
  EXPECT_EQ(tighter_limit(2, 0), 2);
  EXPECT_EQ(tighter_limit(0, 0), 0);
}

TEST(Tres, GpusPerNodeFromEveryForm) {
  EXPECT_EQ(parse_gpus_per_node(""), 0);
  EXPECT_EQ(parse_gpus_per_node("gres:gpu:4"), 4);
  EXPECT_EQ(parse_gpus_per_node("gres/gpu:2"), 2);
  EXPECT_EQ(parse_gpus_per_node("gres/gpu=8"), 8);
  EXPECT_EQ(parse_gpus_per_node("gpu:4"), 4);
  EXPECT_EQ(parse_gpus_per_node("gres:gpu:a100:3"), 3);
  EXPECT_EQ(parse_gpus_per_node("gpu:4(S:0-1)"), 4);
  EXPECT_EQ(parse_gpus_per_node("cpu=4,gres/gpu:2"), 2);
  EXPECT_EQ(parse_gpus_per_node("gres:gpumem:1000"), 0);
  EXPECT_EQ(parse_gpus_per_node("gres:gpu"), 1);
}

TEST(SlurmJobState, FinishedStates) {
  EXPECT_FALSE(is_finished(SlurmJobState::kPending));
  EXPECT_FALSE(is_finished(SlurmJobState::kRunning));
  EXPECT_FALSE(is_finished(SlurmJobState::kSuspended));
  EXPECT_TRUE(is_finished(SlurmJobState::kCompleted));
  EXPECT_TRUE(is_finished(SlurmJobState::kTimeout));
  EXPECT_TRUE(is_finished(SlurmJobState::kCancelled));
}

#if MIRAGE_HAVE_LIBSLURM
// A busy slurmctld times out on the socket: the call may have been carried out, so its outcome is
// unknown (asked again, never taken as a refusal); a refusal is one.
TEST(LibSlurmErrors, ASocketTimeoutLeavesTheOutcomeUnknown) {
  EXPECT_TRUE(slurm_error_is_transient(SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT));
  EXPECT_TRUE(slurm_error_is_transient(SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT));
  EXPECT_TRUE(slurm_error_is_transient(SLURM_COMMUNICATIONS_CONNECTION_ERROR));
  EXPECT_FALSE(slurm_error_is_transient(ESLURM_INVALID_PARTITION_NAME));
  EXPECT_FALSE(slurm_error_is_transient(ESLURM_ACCESS_DENIED));
}
#endif

}  // namespace
}  // namespace mirage::daemon
