// Dependencies between a user's jobs, and the test that tells them from chance on the log's own
// times (Calibration.h).

#include <algorithm>
#include <cmath>
#include <vector>

#include "CalibrationChance.h"
#include "CalibrationParts.h"

namespace mirage::calibration {

namespace {

// Whether `b` waited, at some instant of its wait (every `step`), with room free for it on the
// whole machine and nothing the log shows holding it back: the log's own evidence, read before
// any hidden room (which is inferred from the same waits, so would sort them).
bool waited_with_room(const LogView& log, const ClusterSpec& spec, const Job& b,
                      const Calibration& c, Seconds step) {
  for (Seconds t = b.submit + step; t < b.start; t += step)
    if (!held_by_rules(log, b, t, c) && log.used.at(t) + b.nodes <= spec.nodes) return true;
  return false;
}

}  // namespace

// The log's links outside arrays, and how many of them its own times give by chance. A job that
// waited with room free and started as one of its user's earlier jobs ended is a link; but some
// job ends just before most starts (the freed nodes are what the waiting job took), and that job
// is the same user's by chance as often as the user holds the jobs running then. So, for each
// such waiting job b, the jobs running at dependency_slack before its start that ended within it
// are taken as a random draw from all the jobs running then, whoever's they are: the chance that
// the draw holds one that could be b's link (its user's, started before it, submitted no later,
// still running a step after its submission) is hypergeometric. The log's own starts and ends
// stay as they are; only who ran which job is left to chance.
ChanceCount count_links_against_chance(const LogView& log, const ClusterSpec& spec,
                                       const CalibrationSettings& settings,
                                       const DependencyCandidates& candidates,
                                       const Calibration& c) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  RunningSweep sweep(log);
  ChanceCount out;
  for (const Job* b : sweep.by_start()) {
    const std::vector<const Job*>& alive = sweep.at(b->start, settings.dependency_slack);
    if (b->user.empty() || b->start - b->submit < step) continue;
    if (const auto it = candidates.find(b); it != candidates.end() && it->second.array_member)
      continue;  // an array's throttle is its own evidence
    if (held_by_rules(log, *b, b->start - 1, c)) continue;
    int running = 0, own = 0, ended = 0;
    bool own_ended = false;
    for (const Job* a : alive) {
      if (a == b) continue;
      const bool link = a->user == b->user && a->submit <= b->submit && a->end >= b->submit + step,
                 in_slack = a->end <= b->start;
      ++running;
      own += link;
      ended += in_slack;
      own_ended = own_ended || (link && in_slack);
    }
    if (own == 0 || ended == 0 || !waited_with_room(log, spec, *b, c, step)) continue;
    out.add(own_ended, running, own, ended);
  }
  return out;
}

// Jobs that started as the same user's earlier job ended, after waiting, while the limits did
// not hold them: each with the job it may have waited for; and the members of throttled arrays,
// each with the member it waited for (in place of any other).
DependencyCandidates dependency_candidates(const LogView& log, const CalibrationSettings& settings,
                                           const Calibration& c) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  DependencyCandidates out;
  for (const Job* b : log.jobs) {
    if (b->user.empty() || b->start - b->submit < step) continue;
    if (held_by_rules(log, *b, b->start - 1, c)) continue;
    const auto& list = log.ends.at(b->user);
    auto it = std::upper_bound(list.begin(), list.end(), b->start,
                               [](Seconds t, const Job* j) { return t < j->end; });
    while (it != list.begin()) {
      const Job* a = *--it;
      if (a->end < b->start - settings.dependency_slack) break;
      // Started before b (so no two jobs ever wait for each other), and still running well
      // after b was submitted.
      if (a != b && a->start < b->start && a->submit <= b->submit && a->end >= b->submit + step) {
        out.emplace(b, WaitedFor{a, false});
        break;
      }
    }
  }
  if (settings.arrays) add_throttled_array_members(log, settings, out);
  return out;
}

// A candidate is a dependency when at some moment of its wait the cluster had room for it and its
// limits did not hold it: nothing but the job it waited for explains the wait.
void confirm_dependencies(const LogView& log, const ClusterSpec& spec,
                          const CalibrationSettings& settings,
                          const DependencyCandidates& candidates, Calibration& c) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  for (const Job* b : log.jobs) {
    const auto it = candidates.find(b);
    if (it == candidates.end()) continue;
    const Job* a = it->second.job;
    bool room = false;
    for (Seconds t = b->submit + step; t < a->end && !room; t += step)
      room = !held_by_rules(log, *b, t, c) && log.used.at(t) + b->nodes <= capacity_at(c, spec, t);
    if (!room) continue;
    // A link outside an array is kept only where the log's links stand out from chance
    // (test_links_against_chance); an array's throttle is its own evidence.
    if (!it->second.array_member && !c.links_told_apart) continue;
    c.dependencies.emplace_back(b->id, a->id);
    if (it->second.array_member) ++c.array_members;
  }
}

// Whether the log's dependencies outside arrays stand out from chance (`links`, counted by
// count_links_against_chance): they must outnumber those the log's own times give by chance by
// more than kLinkSigmas standard deviations. Else c's links outside arrays are dropped: the log
// cannot tell them from none.
void test_links_against_chance(const LogView& log, const ClusterSpec& spec,
                               const CalibrationSettings& settings,
                               const DependencyCandidates& candidates, const ChanceCount& links,
                               Calibration& c) {
  c.links_seen = links.seen;
  c.links_by_chance = static_cast<int>(std::lround(links.expected));
  c.links_told_apart = true;
  if (!settings.test_links || links.stands_out()) return;
  c.links_told_apart = false;
  c.dependencies.clear();
  c.array_members = 0;
  confirm_dependencies(log, spec, settings, candidates, c);  // the arrays' links alone
}

}  // namespace mirage::calibration
