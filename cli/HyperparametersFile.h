#pragma once
// `mirage train --hyperparameters FILE.toml`: the learning knobs, one key each, named as the
// fields of learned::Hyperparameters. A key left out keeps its default; an unknown key or a bad
// value names the file, the line and the key. `mirage train --help` lists every key with its
// default (hyperparameters_help).
#include <string>
#include <vector>

#include "mirage/agents/learned/Training.h"

namespace mirage::cli {

// What the file sets: the hyperparameters, and how many threads each network computes with.
struct LearningSettings {
  learned::Hyperparameters hp;
  int torch_threads = 1;  // LibTorch intra-op threads per network
};

// Throws InputError naming the file, line and key.
LearningSettings read_hyperparameters(const std::string& path);

// Every key, its default and what it does: the reference `mirage train --help` ends with.
std::string hyperparameters_help();

}  // namespace mirage::cli
