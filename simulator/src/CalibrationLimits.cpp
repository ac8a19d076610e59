// User limits: the per-user limit a log shows, and the test that tells it from chance on the
// log's own starts (Calibration.h).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
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

// One job's waiting instants on one side of the limit: its nodes, how many instants, and at how
// many the log showed room for it, by each mark (kMarks).
struct Instants {
  int nodes = 0;
  int all = 0;
  int room[2] = {0, 0};
};

// The two marks room leaves beside a waiting job: nodes free by the log's own counts that it
// fitted (exact where the log shows the whole machine), and room given to a later job, a job
// submitted after it of at least its nodes started in the step before (what shows room where work
// the log does not show held part of the machine: LS6's node counts leave room beside nearly
// every wait).
constexpr int kFreeNodes = 0, kTakenByLaterJob = 1, kMarks = 2;

// The waiting jobs of one side of the limit, by size: a large job fits free room less often than
// a small one whatever holds it, and a limit on nodes holds the large ones first, so a share is
// only ever compared with the other side's share for jobs of the same nodes.
struct Shares {
  std::map<int, std::vector<Instants>> by_nodes;  // ordered: the sums come out the same every run

  void add(const Instants& job) {
    if (job.all > 0) by_nodes[job.nodes].push_back(job);
  }
  static double instants(const std::vector<Instants>& jobs) {
    double n = 0;
    for (const Instants& j : jobs) n += j.all;
    return n;
  }
  static double share(const std::vector<Instants>& jobs, int mark) {
    double room = 0;
    for (const Instants& j : jobs) room += j.room[mark];
    const double n = instants(jobs);
    return n > 0 ? room / n : 0;
  }
  static double squared_residuals(const std::vector<Instants>& jobs, int mark, double p) {
    double s = 0;
    for (const Instants& j : jobs) s += std::pow(j.room[mark] - j.all * p, 2);
    return s;
  }
  int jobs() const {
    int n = 0;
    for (const auto& [nodes, jobs] : by_nodes) n += static_cast<int>(jobs.size());
    return n;
  }
};

// This side's share of `mark` against `under`'s, size for size: over this side's jobs of a size
// that also waited under the limit (`compared` of them), the share with room, the share their
// sizes showed under it (each size's under-share weighted by this side's instants of it), and the
// excess in standard deviations. The instants of one job are far from independent (a job held at
// the limit for a day sees the same room all day), so the spread is taken job by job (a
// cluster-robust variance): the excess is the sum over jobs of (room - all * p_size), and its
// variance the sum of their squares, plus, per size, that of p_size itself, estimated the same
// way on the jobs under it (sizes are independent, so these add).
struct Comparison {
  int compared = 0;
  double share = 0, under = 0, sigmas = 0;
};

Comparison compare_by_size(const Shares& at, const Shares& under, int mark) {
  Comparison out;
  double n = 0, room = 0, expected = 0, variance = 0;
  for (const auto& [nodes, jobs] : at.by_nodes) {
    const auto like = under.by_nodes.find(nodes);
    if (like == under.by_nodes.end()) continue;  // no job of this size waited under it
    const double p = Shares::share(like->second, mark), m = Shares::instants(like->second);
    const double n_size = Shares::instants(jobs);
    out.compared += static_cast<int>(jobs.size());
    n += n_size;
    room += Shares::share(jobs, mark) * n_size;
    expected += p * n_size;
    variance += Shares::squared_residuals(jobs, mark, p) +
                n_size * n_size * Shares::squared_residuals(like->second, mark, p) / (m * m);
  }
  if (n == 0) return out;
  out.share = room / n;
  out.under = expected / n;
  out.sigmas = variance > 0 ? (room - expected) / std::sqrt(variance) : 0;
  return out;
}

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
// value must exceed the share jobs of the same nodes showed under it by more than kLimitSigmas
// standard deviations (compare_by_size). Without a limit a user at their most running jobs (or
// nodes) waits beside room no more often than when running fewer (less: their jobs ran because
// room was there); the sizes must match because a limit on nodes holds large jobs first, and a
// large job waits beside room it fits less often whatever holds it (a limit of 8 nodes made on 12
// users read -1.4 and -0.9 sd compared with every size under it).
LimitEvidence test_limit_against_chance(const LogView& log, const ClusterSpec& spec,
                                        const CalibrationSettings& settings, const Calibration& c,
                                        const std::unordered_set<std::string>& users,
                                        const UserLimits& candidate) {
  const Seconds step = std::max<Seconds>(1, settings.sample_every);
  const std::vector<const Job*> by_start = jobs_by_start(log);
  Shares at, under;
  for (const Job* b : log.jobs) {
    if (!users.count(b->user) || b->start - b->submit < step) continue;
    Instants held{b->nodes}, free{b->nodes};
    for (Seconds t = b->submit + step; t < b->start; t += step) {
      if (held_by_rules(log, *b, t, c)) continue;  // c holds the running jobs' limit, if kept
      Instants& side = log.held_by_limits(*b, t, candidate) ? held : free;
      ++side.all;
      side.room[kFreeNodes] += log.used.at(t) + b->nodes <= spec.nodes;
      side.room[kTakenByLaterJob] += room_taken_by_later_job(by_start, *b, t, step);
    }
    at.add(held);
    under.add(free);
  }
  LimitEvidence e;
  e.waiting_jobs = at.jobs();
  const Comparison free = compare_by_size(at, under, kFreeNodes);
  const Comparison taken = compare_by_size(at, under, kTakenByLaterJob);
  e.compared_jobs = free.compared;
  e.free_at_limit = free.share;
  e.free_under = free.under;
  e.free_sigmas = free.sigmas;
  e.taken_at_limit = taken.share;
  e.taken_under = taken.under;
  e.taken_sigmas = taken.sigmas;
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
  c.user_limits = {};  // the running jobs' test reads the log with no limit
  c.user_limits.max_running_jobs = infer_limit(log, spec, settings, c, log.user_jobs, false,
                                               c.users_at_job_limit, c.job_limit_evidence);
  // A wait the running-jobs limit kept explains is no evidence for a limit on nodes: 3 jobs of 8
  // nodes reach 24 nodes under a limit of 3 jobs, and those users' 8-node jobs wait beside room at
  // 24 as the limit of 3 holds them (+3.6 sd by room later jobs took, in a log made with it).
  c.user_limits.max_running_nodes = infer_limit(log, spec, settings, c, log.user_nodes, true,
                                                c.users_at_node_limit, c.node_limit_evidence);
}

}  // namespace mirage::calibration

namespace mirage {

std::string LimitEvidence::describe(const char* what, int users_at, int users) const {
  if (candidate == 0) return "";
  const std::string seen = fmt::format(
      "{} of {} users reach {} {}; at it {} of their jobs waited ({} of a size that waited under "
      "it too), beside nodes free they fitted at {:.0f}% of the instants (their sizes under it "
      "{:.0f}%, {:+.1f} sd) and room a later job took at {:.0f}% ({:.0f}%, {:+.1f} sd)",
      users_at, users, candidate, what, waiting_jobs, compared_jobs, 100 * free_at_limit,
      100 * free_under, free_sigmas, 100 * taken_at_limit, 100 * taken_under, taken_sigmas);
  return told_apart ? seen : seen + ": the log cannot tell this limit apart from none";
}

std::string Calibration::describe_limits() const {
  std::string out = job_limit_evidence.describe("running jobs", users_at_job_limit, users);
  const std::string nodes = node_limit_evidence.describe("nodes", users_at_node_limit, users);
  if (!out.empty() && !nodes.empty()) out += "; ";
  return out + nodes;
}

}  // namespace mirage
