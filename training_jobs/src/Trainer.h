#pragma once
// One run (one segment of a campaign) of the GPT trainer: join the other ranks, take the
// checkpoint directory (waiting for a predecessor in hand-off mode), resume from the newest valid
// checkpoint, train until the step target, the run's step or time budget, or a signal; write the
// final checkpoint and the hand-off marker; exit.
#include "TrainOptions.h"

namespace mirage::training {

// Exit statuses, also in docs/training-job.md.
enum TrainerExit : int {
  kExitOk = 0,                 // stopped cleanly (target, budget or signal), checkpoint written
  kExitError = 1,              // bad arguments, I/O or distributed failure
  kExitNoValidCheckpoint = 2,  // checkpoints exist but none verifies or loads: not starting over
  kExitLocked = 3,  // another trainer holds the checkpoint directory (or held it until a signal)
};

int run_trainer(const TrainOptions& options);

}  // namespace mirage::training
