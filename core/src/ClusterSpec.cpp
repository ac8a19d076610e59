#include "mirage/core/ClusterSpec.h"

namespace mirage {

std::string_view to_string(BackfillMode mode) {
  switch (mode) {
    case BackfillMode::kNone: return "none";
    case BackfillMode::kEasy: return "easy";
    case BackfillMode::kSlurm: return "slurm";
  }
  return "?";
}

std::optional<BackfillMode> parse_backfill_mode(std::string_view text) {
  if (text == "none") return BackfillMode::kNone;
  if (text == "easy") return BackfillMode::kEasy;
  if (text == "slurm") return BackfillMode::kSlurm;
  return std::nullopt;
}

std::string_view to_string(AllocationMode mode) {
  return mode == AllocationMode::kWholeNode ? "whole-node" : "gpu";
}

}  // namespace mirage
