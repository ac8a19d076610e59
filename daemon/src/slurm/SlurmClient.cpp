#include "mirage/daemon/slurm/SlurmClient.h"

#include <algorithm>
#include <charconv>

namespace mirage::daemon {

std::string_view to_string(SlurmJobState state) {
  switch (state) {
    case SlurmJobState::kPending: return "PENDING";
    case SlurmJobState::kRunning: return "RUNNING";
    case SlurmJobState::kSuspended: return "SUSPENDED";
    case SlurmJobState::kCompleted: return "COMPLETED";
    case SlurmJobState::kCancelled: return "CANCELLED";
    case SlurmJobState::kFailed: return "FAILED";
    case SlurmJobState::kTimeout: return "TIMEOUT";
    case SlurmJobState::kNodeFail: return "NODE_FAIL";
    case SlurmJobState::kPreempted: return "PREEMPTED";
    case SlurmJobState::kBootFail: return "BOOT_FAIL";
    case SlurmJobState::kDeadline: return "DEADLINE";
    case SlurmJobState::kOutOfMemory: return "OUT_OF_MEMORY";
  }
  return "?";
}

bool is_finished(SlurmJobState state) {
  return state != SlurmJobState::kPending && state != SlurmJobState::kRunning &&
         state != SlurmJobState::kSuspended;
}

std::string JobTag::str() const {
  return "mirage:" + store + ":" + std::to_string(campaign) + ":" + std::to_string(segment) + ":" +
         std::to_string(attempt);
}

namespace {

template <typename T>
bool parse_number(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

std::optional<JobTag> JobTag::parse(std::string_view text) {
  constexpr std::string_view kPrefix = "mirage:";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  JobTag tag;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 16) return std::nullopt;
  for (char ch : text.substr(0, colon))
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return std::nullopt;
  tag.store = std::string(text.substr(0, colon));
  text.remove_prefix(colon + 1);
  const auto a = text.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = text.find(':', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  if (!parse_number(text.substr(0, a), tag.campaign) ||
      !parse_number(text.substr(a + 1, b - a - 1), tag.segment) ||
      !parse_number(text.substr(b + 1), tag.attempt))
    return std::nullopt;
  if (tag.campaign <= 0 || tag.segment < 0 || tag.attempt <= 0) return std::nullopt;
  return tag;
}

const PartitionInfo* choose_partition(const std::vector<PartitionInfo>& partitions,
                                      const std::string& configured) {
  const PartitionInfo* chosen = nullptr;
  for (const auto& p : partitions)
    if (!configured.empty() ? p.name == configured : p.is_default) chosen = &p;
  return chosen;
}

int parse_node_limit(std::string_view tres) {
  constexpr std::string_view kNodeTresId = "4";  // TRES_NODE in Slurm's own numbering
  while (!tres.empty()) {
    const auto cut = tres.find(',');
    const std::string_view item = tres.substr(0, cut);
    tres = cut == std::string_view::npos ? std::string_view{} : tres.substr(cut + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq);
    int n = 0;
    if ((key == kNodeTresId || key == "node") && parse_number(item.substr(eq + 1), n) && n > 0)
      return n;
  }
  return 0;
}

int tighter_limit(int a, int b) {
  if (a <= 0) return std::max(0, b);
  return b > 0 ? std::min(a, b) : a;
}

int parse_gpus_per_node(std::string_view tres) {
  int total = 0;
  while (!tres.empty()) {
    const auto cut = tres.find_first_of(",;");
    std::string_view item = tres.substr(0, cut);
    tres = cut == std::string_view::npos ? std::string_view{} : tres.substr(cut + 1);
    for (std::string_view prefix : {"gres:", "gres/"})
      if (item.substr(0, prefix.size()) == prefix) item.remove_prefix(prefix.size());
    const auto paren = item.find('(');  // "gpu:4(S:0-1)" in node GRES strings
    if (paren != std::string_view::npos) item = item.substr(0, paren);
    if (item.substr(0, 3) != "gpu") continue;
    item.remove_prefix(3);
    if (item.empty()) {  // "gpu" alone: one
      total += 1;
      continue;
    }
    if (item[0] != ':' && item[0] != '=') continue;  // e.g. "gpumem"
    // The count is the last ':'/'=' field; a type ("a100") may come before it.
    const auto last = item.find_last_of(":=");
    int n = 0;
    const std::string_view count = item.substr(last + 1);
    if (parse_number(count, n))
      total += n;
    else if (last == 0)
      total += 1;  // "gpu:a100": one of that type
  }
  return total;
}

}  // namespace mirage::daemon
