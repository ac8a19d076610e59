#pragma once
// Where this process sits in a data-parallel run, read from the environment `srun` gives each
// task (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), with MIRAGE_* overrides for runs without srun
// (tests) and the torchrun names (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) as a
// fallback.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace mirage::training {

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string job_id = "-";      // SLURM_JOB_ID, for log lines and the hand-off marker
  std::string run_id = "local";  // names the rendezvous: unique per srun step
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
};

struct RendezvousError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using GetEnv = std::function<const char*(const char*)>;

// Throws RendezvousError on malformed or inconsistent values (e.g. rank >= world size).
DistributedEnv distributed_env_from(const GetEnv& getenv);
DistributedEnv distributed_env_from_process();

}  // namespace mirage::training
