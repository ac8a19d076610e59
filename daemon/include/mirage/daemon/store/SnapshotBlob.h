#pragma once
// The snapshot history's compact binary form (little-endian, versioned), as the store keeps it.
#include <vector>

#include "mirage/core/QueueSnapshot.h"

namespace mirage::daemon {

std::vector<unsigned char> encode_snapshot_blob(const QueueSnapshot& snapshot);
QueueSnapshot decode_snapshot_blob(const std::vector<unsigned char>& blob);

}  // namespace mirage::daemon
