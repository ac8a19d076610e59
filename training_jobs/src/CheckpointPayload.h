#pragma once
// The payload inside a checkpoint file (see CheckpointFile.h for the framing): one LibTorch
// archive with `config` (model shape), `state` (TrainState; seq_len, corpus_* and campaign_id
// only where known, and absent from checkpoints of older trainers), `model` (parameters) and
// `optim` (AdamW moments).

#include "AdamW.h"
#include "CheckpointFile.h"
#include "GptModel.h"
#include "TrainState.h"

namespace mirage::training {

// Streams the payload into `sink` (never whole in memory: an XL checkpoint is 18 GB).
void encode_payload(GptModel& model, const AdamW& optimizer, const TrainState& state,
                    const PayloadSink& sink);

// The model shape a payload was written with.
GptConfig payload_config(const PayloadReader& payload);

// Restores model, optimizer and state; throws when the payload does not fit this model.
void decode_payload(const PayloadReader& payload, GptModel& model, AdamW& optimizer,
                    TrainState& state);

}  // namespace mirage::training
