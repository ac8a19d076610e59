#pragma once
// Fitting the wait model (mirage/agents/WaitModel.h) in LibTorch, inside the training plugin
// (`mirage train --agent wait-model`): the rows come in, the weights go out as a WaitNet.
#include <functional>
#include <string>

#include "mirage/agents/WaitModel.h"

namespace mirage::learned {

// Trains on `data` (rows in submission order; the latest t.val_share validate and stop it early)
// and returns the epoch with the lowest validation pinball loss. `message` hears the progress.
WaitModelFit train_wait_model(const WaitTrainingSet& data, const WaitModelTraining& t,
                              const std::function<void(const std::string&)>& message);

}  // namespace mirage::learned
