// Why, in words: every submission keeps the reason it was made, for `campaign show`.
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "mirage/agents/PolicyRegistry.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;

// Submits at once, saying `reason` (which may be empty, as a learned agent's is).
struct EagerPolicy final : Policy {
  std::string reason;
  explicit EagerPolicy(std::string r) : reason(std::move(r)) {}
  std::string name() const override { return "eager"; }
  Decision decide(const Observation&) override {
    Decision d = Decision::submit();
    d.confidence = 0.5;
    d.reason = reason;
    return d;
  }
};

PolicyFactory factory() {
  return [](const PolicySpec& policy) -> std::unique_ptr<Policy> {
    if (policy.name == "eager") return std::make_unique<EagerPolicy>("the queue is about to fill");
    if (policy.name == "mute") return std::make_unique<EagerPolicy>("");
    return mirage::make_policy(policy);
  };
}

ControllerConfig config() {
  ControllerConfig c;
  // The submissions the policy makes; the fallback chain has its own tests (FallbackChainTest).
  c.fallback_chain = false;
  c.fallback_lead = 120;
  c.decision_interval = 600;
  return c;
}

std::string reason_of(const Harness& h, std::int64_t id, int segment, int attempt) {
  for (const auto& s : h.store->submissions(id))
    if (s.segment == segment && s.attempt == attempt) return s.reason;
  return "(no such submission)";
}

TEST(SubmissionReason, FirstSegmentPredecessorEndedAndFallbackSayWhy) {
  Harness h(config(), factory());
  const auto id = h.controller->add(simple_request(3)).spec.id;  // reactive, 1 h limit
  h.tick();
  EXPECT_EQ(reason_of(h, id, 0, 1), "first segment");
  const JobId first = h.job_of(id, 0);
  h.slurm.start(first);
  h.tick();
  h.slurm.finish(first, SlurmJobState::kTimeout);
  h.tick();
  EXPECT_EQ(reason_of(h, id, 1, 1), "segment 0 (job " + std::to_string(first) + ") ended");
  h.slurm.start(h.job_of(id, 1));
  h.tick();
  h.clock.advance(kHour - 120);
  h.tick();
  EXPECT_EQ(reason_of(h, id, 2, 1),
            "fallback: segment 1 reaches its limit in 2m and reactive had not submitted");
}

TEST(SubmissionReason, APolicyGivesItsOwnReasonOrTheDaemonSaysWhatItKnows) {
  Harness h(config(), factory());
  for (const char* policy : {"eager", "mute"}) {
    auto req = simple_request(2, kHour, policy);
    req.policy = policy;
    const auto id = h.controller->add(req).spec.id;
    h.tick();
    h.slurm.start(h.job_of(id, 0));
    h.tick();  // asked as soon as its predecessor runs
    EXPECT_EQ(reason_of(h, id, 1, 1), std::string(policy) == "eager"
                                          ? "eager: the queue is about to fill"
                                          : "mute: submit now (confidence 0.50; segment 0 ends "
                                            "in 1h)");
  }
}

TEST(SubmissionReason, ARetryNamesTheAttemptItRepeatsAndASecondIntentKeepsTheFirstReason) {
  Harness h(config(), factory());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.slurm.finish(h.job_of(id, 0), SlurmJobState::kNodeFail);
  h.tick(/*perform=*/false);  // the daemon dies after the intent, before sbatch ran
  EXPECT_EQ(reason_of(h, id, 0, 2), "again after attempt 1");
  h.restart();
  h.clock.advance(10);
  h.tick();  // not in Slurm under its tag: submitted again under the same attempt
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u);
  EXPECT_EQ(reason_of(h, id, 0, 2), "again after attempt 1");
}

}  // namespace
}  // namespace mirage::daemon
