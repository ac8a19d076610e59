#include "mirage/agents/CampaignWork.h"

#include <algorithm>

#include "mirage/agents/Episode.h"

namespace mirage {

int CampaignWork::segments_needed(const ChainSpec& chain) const {
  if (!active()) return 0;
  const Seconds first = chain.runtime;
  if (work <= first) return 1;
  const Seconds each = std::max<Seconds>(1, chain.runtime - restart_overhead);
  return 1 + static_cast<int>((work - first + each - 1) / each);
}

std::optional<Seconds> CampaignLedger::started(Seconds start,
                                               std::optional<Seconds> predecessor_stop) {
  ++out_.segments;
  start_ = start;
  useful_from_ = start;
  if (predecessor_stop) {
    useful_from_ = std::max(start, *predecessor_stop) + work_.restart_overhead;
    out_.restart += work_.restart_overhead;
  }
  const Seconds natural_end = start + runtime_;
  if (done_ + std::max<Seconds>(0, natural_end - useful_from_) >= work_.work)
    return useful_from_ + (work_.work - done_);
  return std::nullopt;
}

void CampaignLedger::stopped(Seconds stop, bool cut) {
  out_.charged += stop - start_;
  const Seconds ran = std::max<Seconds>(0, stop - useful_from_);
  Seconds kept = ran;
  if (cut && work_.checkpoint_every > 0)
    kept = ran / work_.checkpoint_every * work_.checkpoint_every;
  done_ += kept;
  out_.redo += ran - kept;
}

void CampaignLedger::finished(Seconds at) {
  out_.charged += at - start_;
  done_ = work_.work;
  out_.finish = at;
  out_.complete = true;
}

void CampaignLedger::add_boundary(Seconds interruption, Seconds overlap) {
  out_.interruption += interruption;
  out_.overlap += overlap;
}

}  // namespace mirage
