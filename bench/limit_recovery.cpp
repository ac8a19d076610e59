// How often the calibration reads a per-user limit back off logs the simulator made with it (and
// reads none off logs made without one): for each limit the logs were made with and each number
// of users, over four seeds with and without fair share, how many logs kept the made limit, how
// many read a limit that was not made, and the range of the null test's two marks (in standard
// deviations, test_limit_against_chance in simulator/src/CalibrationLimits.cpp). Prints one
// table (docs/simulator.md); asserts nothing (tests/simulator/CalibrationRecoveryTest.cpp does).
//
//   limit_recovery
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "mirage/simulator/Calibration.h"
#include "support/MadeLogs.h"

using namespace mirage;

namespace {

struct Maker {
  const char* name;
  UserLimits limits;
};

// The least and most of the values added (none: "-").
struct Range {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  void add(double v) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  std::string str(const char* format = "{:+.1f} to {:+.1f}") const {
    return low > high ? "-" : fmt::format(fmt::runtime(format), low, high);
  }
};

}  // namespace

int main() {
  const std::vector<Maker> makers = {
      {"none", {}}, {"3 running jobs", {3, 0}}, {"8 nodes", {0, 8}}, {"16 nodes", {0, 16}}};
  const unsigned seeds[] = {3, 5, 7, 11};
  const double fair_shares[] = {0, 1000};
  fmt::print(
      "| made with a limit of | users | logs | made limit kept | other limit read | its users' "
      "jobs held at it | of them, of a size that waited under it too | free nodes, sd | "
      "room a later job took, sd |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const Maker& m : makers)
    for (const int users : {4, 12, 40}) {
      int logs = 0, kept = 0, other = 0;
      Range held, compared, free, taken;
      for (const double fair_share : fair_shares)
        for (const unsigned seed : seeds) {
          ClusterSpec maker = test::made_log_machine();
          maker.user_limits = m.limits;
          maker.priority.weight_fairshare = fair_share;
          const std::vector<Job> log =
              test::run_log(test::as_users(test::workload(seed), users, seed), maker);
          CalibrationSettings settings;
          settings.priority = false;  // the limits are read before the weights
          const Calibration c = infer_calibration(log, test::made_log_machine(), settings);
          ++logs;
          const bool made_nodes = m.limits.max_running_nodes > 0;
          const UserLimits& read = c.user_limits;
          kept += m.limits != UserLimits{} && read == m.limits;
          other += read != UserLimits{} && read != m.limits;
          // The evidence of the kind made (of both, for logs made with none).
          for (const LimitEvidence* e : {&c.job_limit_evidence, &c.node_limit_evidence}) {
            const bool nodes = e == &c.node_limit_evidence;
            if (e->candidate == 0 || (m.limits != UserLimits{} && nodes != made_nodes)) continue;
            held.add(e->waiting_jobs);
            compared.add(e->compared_jobs);
            if (e->compared_jobs == 0) continue;  // no job of their sizes waited under it
            free.add(e->free_sigmas);
            taken.add(e->taken_sigmas);
          }
        }
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", m.name, users, logs,
                 m.limits == UserLimits{} ? "" : std::to_string(kept), other,
                 held.str("{:.0f} to {:.0f}"), compared.str("{:.0f} to {:.0f}"), free.str(),
                 taken.str());
    }
}
