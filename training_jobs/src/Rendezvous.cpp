#include "Rendezvous.h"

#include <cstdlib>
#include <initializer_list>
#include <optional>

namespace mirage::training {
namespace {

std::optional<std::string> first_set(const GetEnv& getenv, std::initializer_list<const char*> names,
                                     std::string* which = nullptr) {
  for (const char* name : names) {
    const char* value = getenv(name);
    if (value != nullptr && *value != '\0') {
      if (which) *which = name;
      return std::string(value);
    }
  }
  return std::nullopt;
}

long parse_int(const std::string& name, const std::string& text) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size()) throw RendezvousError(name + "='" + text + "' is not an integer");
  return value;
}

int int_from(const GetEnv& getenv, std::initializer_list<const char*> names, int fallback) {
  std::string which;
  auto text = first_set(getenv, names, &which);
  return text ? static_cast<int>(parse_int(which, *text)) : fallback;
}

}  // namespace

DistributedEnv distributed_env_from(const GetEnv& getenv) {
  DistributedEnv env;
  env.rank = int_from(getenv, {"MIRAGE_RANK", "SLURM_PROCID", "RANK"}, 0);
  env.world_size = int_from(getenv, {"MIRAGE_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}, 1);
  env.local_rank = int_from(getenv, {"MIRAGE_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}, 0);
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    throw RendezvousError("rank " + std::to_string(env.rank) + " does not fit world size " +
                          std::to_string(env.world_size));
  }
  if (auto job = first_set(getenv, {"SLURM_JOB_ID"})) env.job_id = *job;
  if (auto run = first_set(getenv, {"MIRAGE_RUN_ID"})) {
    env.run_id = *run;
  } else if (auto job = first_set(getenv, {"SLURM_JOB_ID"})) {
    env.run_id = *job + "." + first_set(getenv, {"SLURM_STEP_ID"}).value_or("0");
  }
  // The batch host launches srun and, with Slurm's block distribution, hosts rank 0.
  if (auto addr = first_set(getenv, {"MASTER_ADDR", "SLURM_LAUNCH_NODE_IPADDR"})) {
    env.master_addr = *addr;
  }
  std::string which;
  if (auto port = first_set(getenv, {"MASTER_PORT"}, &which)) {
    long value = parse_int(which, *port);
    if (value < 1 || value > 65535) throw RendezvousError("MASTER_PORT out of range: " + *port);
    env.master_port = static_cast<std::uint16_t>(value);
  } else if (auto job = first_set(getenv, {"SLURM_JOB_ID"}, &which)) {
    // A port per job, so two jobs sharing a first node do not collide.
    env.master_port = static_cast<std::uint16_t>(29500 + parse_int(which, *job) % 20000);
  }
  return env;
}

DistributedEnv distributed_env_from_process() {
  return distributed_env_from([](const char* name) { return std::getenv(name); });
}

}  // namespace mirage::training
