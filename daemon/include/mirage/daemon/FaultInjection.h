#pragma once
// Test hooks for the crash tests (tests/daemon/integration.sh): a SlurmClient that SIGKILLs its
// own process, with the probabilities in MIRAGE_FAULT_AFTER_INTENT and MIRAGE_FAULT_AFTER_SUBMIT,
// right before a submission (its intent is already durable) or right after Slurm accepted it
// (before its job id is recorded). The daemon and `mirage tick` alike. Unset in normal use.
#include <memory>

#include "mirage/daemon/SlurmClient.h"

namespace mirage::daemon {

// `client` itself when neither variable is set.
std::unique_ptr<SlurmClient> with_fault_injection(std::unique_ptr<SlurmClient> client);

}  // namespace mirage::daemon
