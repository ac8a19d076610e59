#pragma once
// The epoch loop pg and the risk-input pg share (PgEpochs.cpp).
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "Nets.h"

namespace mirage::learned {

// The epoch loop pg and the risk-input pg share: each epoch shuffles the training episodes with
// `rng`, hands them to `step` in batches of Hyperparameters::pg_batch_episodes (a step returns
// the loss it adds to the epoch's, or nothing where the batch had no decision), then scores the
// weights with `validate`, records the score in `stop` (calling `keep_best` when they are the
// best so far), reports the epoch as `phase`, and writes the checkpoint, `save` filling the
// learner's archive under `key`. Runs until `stop` is done.
struct PgEpochs {
  std::string phase, key;
  std::function<std::optional<double>(const std::vector<std::size_t>& batch)> step;
  std::function<Calibration()> validate;
  std::function<void()> keep_best;
  std::function<void(torch::serialize::OutputArchive&)> save;
};
void run_pg_epochs(const TrainContext& ctx, torch::nn::Module& policy, std::mt19937_64& rng,
                   EarlyStopping& stop, const PgEpochs& e);

}  // namespace mirage::learned
