// User limits: the per-user limit a log shows, and the test that tells it from chance on the
// log's own starts (Calibration.h).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "CalibrationParts.h"

namespace mirage::calibration {

namespace {

// The value a limit would have: the most any user reached, when at least `min_users` reached it
// (0 else); `users` gets those who reached it.
int limit_candidate(const std::unordered_map<std::string, Steps>& per_user, int min_users,
                    int& at_limit, std::unordered_set<std::string>& users) {
  int most = 0;
  for (const auto& [user, steps] : per_user) most = std::max(most, steps.most());
  for (const auto& [user, steps] : per_user)
    if (steps.most() == most) users.insert(user);
  at_limit = static_cast<int>(users.size());
  return most >= 1 && at_limit >= min_users ? most : 0;
}

// One job's waiting instants on one side of the limit: how many, and at how many the log showed
// room for it, by each mark (kMarks).
struct Instants {
  int all = 0;
  int room[2] = {0, 0};
};

// The two marks room leaves beside a waiting job: nodes free by the log's own counts that it
// fitted (exact where the log shows the whole machine), and room given to a later job, a job
// submitted after it of at least its nodes started in the step before (what shows room where work
// the log does not show held part of the machine: LS6's node counts leave room beside nearly
// every wait).
constexpr int kFreeNodes = 0, kTakenByLaterJob = 1, kMarks = 2;

// The shares of instants with room, summed over jobs, and their excess over other shares in
// standard deviations. The instants of one job are far from independent (a job held at the limit
// for a day sees the same room all day), so the spread is taken job by job (a cluster-robust
// variance): the excess is the sum over jobs of (room - all * p), and its variance the sum of
// their squares, plus that of p itself, estimated the same way on the jobs it comes from.
struct Shares {
  std::vector<Instants> jobs;
  double instants() const {
    double n = 0;
    for (const Instants& j : jobs) n += j.all;
    return n;
  }
  double share(int mark) const {
    double room = 0;
    for (const Instants& j : jobs) room += j.room[mark];
    return instants() > 0 ? room / instants() : 0;
  }
  double squared_residuals(int mark, double p) const {
    double s = 0;
    for (const Instants& j : jobs) s += std::pow(j.room[mark] - j.all * p, 2);
    return s;
  }
  // How far this share of `mark` lies above `under`'s, in standard deviations (0 where either
  // has no instant or neither varies).
  double sigmas_above(const Shares& under, int mark) const {
    const double n = instants(), m = under.instants();
    if (n == 0 || m == 0) return 0;
    const double p = under.share(mark);
    const double variance =
        squared_residuals(mark, p) + n * n * under.squared_residuals(mark, p) / (m * m);
    return variance > 0 ? n * (share(mark) - p) / std::sqrt(variance) : 0;
  }
};

// Whether a job submitted after `b`, of at least its nodes, started in the step before `t`.
bool room_taken_by_later_job(const std::vector<const Job*>& by_start, const Job& b, Seconds t,
                             Seconds step) {
  auto it = std::upper_bound(by_start.begin(), by_start.end(), t - step,
                             [](Seconds v, const Job* j) { return v < j->start; });
  for (; it != by_start.end() && (*it)->start <= t; ++it)
    if ((*it)->submit > b.submit && (*it)->nodes >= b.nodes) return true;
  return false;
}

// The null of a candidate limit. A limit holds a user's job while room it fits is free; under it
// the same users' jobs wait only for room, for priority or behind backfill's reservations. So,
// over the instants (every sample_every) at which the users who reach the value had a job waiting
// that no boundary or down window held, the share showing room for it (by either mark) at the
// value must exceed their share under it by more than kLimitSigmas standard deviations. Without a
// limit a user at their most running jobs waits beside room no more often than when running fewer
// (less: their jobs ran because room was there).
LimitEvidence test_limit_against_chance(const LogView& log, const ClusterSpec& spec,
                                        const CalibrationSettings& settings, const Calibration& c,
                                        const std::unordered_set<std::string>& users,
                                        const UserLimits& candidate) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  const std::vector<const Job*> by_start = jobs_by_start(log);
  Shares at, under;
  for (const Job* b : log.jobs) {
    if (!users.count(b->user) || b->start - b->submit < step) continue;
    Instants held, free;
    for (Seconds t = b->submit + step; t < b->start; t += step) {
      if (held_by_rules(log, *b, t, c)) continue;  // c holds no limit yet
      Instants& side = log.held_by_limits(*b, t, candidate) ? held : free;
      ++side.all;
      side.room[kFreeNodes] += log.used.at(t) + b->nodes <= spec.nodes;
      side.room[kTakenByLaterJob] += room_taken_by_later_job(by_start, *b, t, step);
    }
    if (held.all > 0) at.jobs.push_back(held);
    if (free.all > 0) under.jobs.push_back(free);
  }
  LimitEvidence e;
  e.waiting_jobs = static_cast<int>(at.jobs.size());
  e.free_at_limit = at.share(kFreeNodes);
  e.free_under = under.share(kFreeNodes);
  e.free_sigmas = at.sigmas_above(under, kFreeNodes);
  e.taken_at_limit = at.share(kTakenByLaterJob);
  e.taken_under = under.share(kTakenByLaterJob);
  e.taken_sigmas = at.sigmas_above(under, kTakenByLaterJob);
  e.told_apart = e.free_sigmas > kLimitSigmas || e.taken_sigmas > kLimitSigmas;
  return e;
}

// The candidate among `per_user`'s values (running jobs or nodes), tested where settings ask.
int infer_limit(const LogView& log, const ClusterSpec& spec, const CalibrationSettings& settings,
                const Calibration& c, const std::unordered_map<std::string, Steps>& per_user,
                bool nodes, int& users_at_limit, LimitEvidence& evidence) {
  std::unordered_set<std::string> users;
  evidence = {};
  evidence.candidate = limit_candidate(per_user, settings.limit_min_users, users_at_limit, users);
  if (evidence.candidate == 0) return 0;
  UserLimits candidate;
  (nodes ? candidate.max_running_nodes : candidate.max_running_jobs) = evidence.candidate;
  const int told = evidence.candidate;
  evidence = test_limit_against_chance(log, spec, settings, c, users, candidate);
  evidence.candidate = told;
  return !settings.test_limits || evidence.told_apart ? told : 0;
}

}  // namespace

void infer_limits(const LogView& log, const ClusterSpec& spec, const CalibrationSettings& settings,
                  Calibration& c) {
  c.users = static_cast<int>(log.user_jobs.size());
  c.user_limits = {};  // the tests read the log with no limit
  const int jobs = infer_limit(log, spec, settings, c, log.user_jobs, false, c.users_at_job_limit,
                               c.job_limit_evidence);
  const int nodes = infer_limit(log, spec, settings, c, log.user_nodes, true, c.users_at_node_limit,
                                c.node_limit_evidence);
  c.user_limits = {jobs, nodes};
}

}  // namespace mirage::calibration

namespace mirage {

std::string LimitEvidence::describe(const char* what, int users_at, int users) const {
  if (candidate == 0) return "";
  const std::string seen = fmt::format(
      "{} of {} users reach {} {}; at it {} of their jobs waited, beside nodes free they fitted "
      "at {:.0f}% of the instants (under it {:.0f}%, {:+.1f} sd) and room a later job took at "
      "{:.0f}% ({:.0f}%, {:+.1f} sd)",
      users_at, users, candidate, what, waiting_jobs, 100 * free_at_limit, 100 * free_under,
      free_sigmas, 100 * taken_at_limit, 100 * taken_under, taken_sigmas);
  return told_apart ? seen : seen + ": the log cannot tell this limit apart from none";
}

std::string Calibration::describe_limits() const {
  std::string out = job_limit_evidence.describe("running jobs", users_at_job_limit, users);
  const std::string nodes = node_limit_evidence.describe("nodes", users_at_node_limit, users);
  if (!out.empty() && !nodes.empty()) out += "; ";
  return out + nodes;
}

}  // namespace mirage
