#include "mirage/agents/Verdict.h"

#include <fmt/format.h>

#include <limits>
#include <map>

namespace mirage {
namespace {

// A boundary censored before its predecessor started is truncated too (Episode.cpp). With --work
// a campaign that did not do its work is no outcome either, however its boundaries went.
bool finished(const SampleOutcome& o) {
  return !o.episode.boundaries.empty() && !o.episode.truncated() &&
         (!o.episode.campaign || o.episode.campaign->complete);
}

}  // namespace

FinishedCosts costs_where_every_policy_finished(const EvalReport& report, const ChainSpec& chain) {
  FinishedCosts f;
  std::map<std::string, const std::vector<SampleOutcome>*> judged;
  for (const auto& [name, outs] : report.outcomes)
    if (name != "oracle") judged[name] = &outs;
  if (judged.empty()) return f;
  f.of = judged.begin()->second->size();
  struct Sum {
    double interruption = 0, overlap = 0;
    std::size_t boundaries = 0;
  };
  std::map<std::string, Sum> sums;
  for (std::size_t s = 0; s < f.of; ++s) {
    bool all = true;
    for (const auto& [name, outs] : judged) all = all && s < outs->size() && finished((*outs)[s]);
    if (!all) continue;
    ++f.samples;
    for (const auto& [name, outs] : judged)
      for (const BoundaryOutcome& b : (*outs)[s].episode.boundaries) {
        sums[name].interruption += static_cast<double>(b.interruption()) / kHour;
        sums[name].overlap += static_cast<double>(b.overlap(chain)) / kHour;
        ++sums[name].boundaries;
      }
  }
  for (const auto& [name, sum] : sums) {
    const double n = static_cast<double>(sum.boundaries);
    f.mean[name] = {sum.interruption / n, sum.overlap / n};
  }
  return f;
}

Verdict choose_policy(const EvalReport& report, const ChainSpec& chain) {
  Verdict v;
  const FinishedCosts f = costs_where_every_policy_finished(report, chain);
  v.samples = f.samples;
  v.of = f.of;
  if (v.samples == 0) return v;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [name, m] : f.mean) {
    const auto [interruption, overlap] = m;
    const double cost = interruption + overlap;
    // Ties go to reactive, which charges nothing twice.
    if (cost < best - 1e-9 || (cost <= best + 1e-9 && name == "reactive")) {
      best = cost;
      v.policy = name;
      v.interruption_h = interruption;
      v.overlap_h = overlap;
    }
    if (name == "reactive") {
      v.has_reactive = true;
      v.reactive_interruption_h = interruption;
      v.reactive_overlap_h = overlap;
    }
  }
  return v;
}

std::string describe(const Verdict& v, std::string_view world) {
  if (v.policy.empty())
    return fmt::format(
        "verdict ({}): none: at no sample did every policy finish its chain (the log's end or "
        "--max-wait cut them off) or, with --work, its campaign",
        world);
  // The samples behind the figures: they may be far fewer than the table's (a few, where most
  // chains were cut off), and the figures are theirs, not the table's means.
  const std::string on =
      fmt::format("on the {} of {} samples every policy finished (chosen on them, in hindsight)",
                  v.samples, v.of);
  if (!v.has_reactive)
    return fmt::format(
        "verdict ({}): use {}: it waits {:.2f} h a boundary and holds {:.2f} h twice, {}", world,
        v.policy, v.interruption_h, v.overlap_h, on);
  if (v.policy == "reactive")
    return fmt::format(
        "verdict ({}): use reactive: nothing here saves more waiting than it holds twice; reactive "
        "waits {:.2f} h a boundary {}",
        world, v.reactive_interruption_h, on);
  return fmt::format(
      "verdict ({}): use {}: it waits {:.2f} h a boundary where reactive waits {:.2f} h, and holds "
      "{:.2f} h twice (reactive {:.2f} h), {}",
      world, v.policy, v.interruption_h, v.reactive_interruption_h, v.overlap_h,
      v.reactive_overlap_h, on);
}

}  // namespace mirage
