#pragma once
// The evaluation's last word for a newcomer: which policy to use on this log and chain, what it
// saves against `reactive` and what it charges twice. An hour waited is priced as an hour held
// twice; the policies are judged on the same samples, those where every one of them (the oracle,
// a bound and not a choice, aside) finished its chain, so a policy whose hard chains were cut off
// is not flattered by the easy ones left.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "mirage/agents/Evaluation.h"

namespace mirage {

struct Verdict {
  std::string policy;                        // empty: no sample where every policy finished
  std::size_t samples = 0;                   // judged on
  std::size_t of = 0;                        // all samples
  double interruption_h = 0, overlap_h = 0;  // the chosen one's, a boundary
  double reactive_interruption_h = 0, reactive_overlap_h = 0;
  bool has_reactive = false;
};

// Each policy's (the oracle aside) mean interruption and overlap a boundary, in hours, on the
// samples where every one of them finished its chain.
struct FinishedCosts {
  std::size_t samples = 0;                                // where every policy finished
  std::size_t of = 0;                                     // all samples
  std::map<std::string, std::pair<double, double>> mean;  // policy -> (interruption, overlap)
};
FinishedCosts costs_where_every_policy_finished(const EvalReport& report, const ChainSpec& chain);

Verdict choose_policy(const EvalReport& report, const ChainSpec& chain);

// One line: "verdict (replay): use forecast: 1.2 h waited a boundary against reactive's 6.3 h,
// for 40.4 h held twice (0.0 h); on 8 of 96 samples, where every policy finished, chosen on them in
// hindsight" (a choice made forward is --pick-before's).
std::string describe(const Verdict& v, std::string_view world);

}  // namespace mirage
