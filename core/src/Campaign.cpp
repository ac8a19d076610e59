#include "mirage/core/Campaign.h"

namespace mirage {

std::string_view to_string(OverlapMode mode) {
  return mode == OverlapMode::kHandoff ? "handoff" : "concurrent";
}

std::optional<OverlapMode> parse_overlap_mode(std::string_view text) {
  if (text == "handoff") return OverlapMode::kHandoff;
  if (text == "concurrent") return OverlapMode::kConcurrent;
  return std::nullopt;
}

std::string_view to_string(SegmentState state) {
  switch (state) {
    case SegmentState::kPlanned: return "planned";
    case SegmentState::kPending: return "pending";
    case SegmentState::kRunning: return "running";
    case SegmentState::kDone: return "done";
    case SegmentState::kFailed: return "failed";
  }
  return "?";
}

}  // namespace mirage
