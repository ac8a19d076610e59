#pragma once
// A policy decides, at each decision instant, whether to submit the next segment now.
#include <memory>
#include <string>

#include "mirage/core/Observation.h"

namespace mirage {

enum class Action { kWait, kSubmitNow };

struct Decision {
  Action action = Action::kWait;
  double confidence = 1.0;  // in [0, 1]; learned agents may report less
  // Why, in words, for people ("predecessor ends in 3h10m; ..."); policies that can say it fill
  // it when they submit (only then: evaluation makes millions of decisions).
  std::string reason;
  static Decision wait() { return {Action::kWait, 1.0, {}}; }
  static Decision submit() { return {Action::kSubmitNow, 1.0, {}}; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual Decision decide(const Observation& obs) = 0;
  // Called before each new episode (or campaign boundary) for policies that keep state.
  virtual void reset() {}
  // Whether decide() reads CampaignView::slurm_estimated_wait, which costs a will-run test (in
  // simulation a fork of the simulator) at every decision: filled only for those that do.
  virtual bool reads_slurm_estimate() const { return false; }
  // Whether decide() reads Observation::window, the encoded history (the learned agents do);
  // simulated episodes of a policy that does not skip encoding it.
  virtual bool reads_window() const { return true; }
  // Whether decide() reads the queue's jobs (Observation::latest's pending and running lists);
  // simulated episodes of a policy that does not show it snapshots without them (the figures,
  // such as the recent waits, stay). Listing the queue was a tenth of a calibrated episode.
  virtual bool reads_queue() const { return true; }
};

}  // namespace mirage
