#pragma once
// Where training stands, apart from the tensors: what a checkpoint records beside the model and
// optimizer, and what `--inspect` and the tests read back. No LibTorch types here.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "GptConfig.h"

namespace mirage::training {

struct TrainState {
  std::int64_t step = 0;           // optimizer steps taken
  std::int64_t data_position = 0;  // sequences consumed (global, across ranks)
  std::int64_t tokens_seen = 0;
  double loss = 0;              // of the last step
  int world_size = 1;           // when written
  std::uint64_t data_seed = 0;  // the data order's seed
  // Per rank: the random generators' state (CPU, and CUDA when used), so dropout continues
  // exactly where it stopped.
  std::vector<std::string> rng_states;
  // What the data position counts (sequences of seq_len bytes of this corpus) and whose
  // checkpoints these are (MIRAGE_CAMPAIGN_ID). 0, -1 and empty: not recorded (a checkpoint of an
  // older trainer, a run outside a campaign).
  int seq_len = 0;
  std::string corpus_name;
  std::int64_t corpus_size = -1;
  std::uint32_t corpus_crc = 0;
  std::string campaign_id;
};

struct CheckpointSummary {
  GptConfig config;
  TrainState state;
  std::int64_t parameter_count = 0;
  std::vector<float> parameters;  // all parameters, flattened in registration order
};

// Loads a checkpoint file completely (checksums, then the archive) and summarises it; throws
// (CheckpointError or c10::Error, both std::exception) when it cannot.
CheckpointSummary inspect_checkpoint(const std::filesystem::path& file);

}  // namespace mirage::training
