#pragma once
// A mark a job leaves beside its user's earlier job (a start as that job ended, a submission
// minutes after it), counted against what the log's own starts and ends give by chance, whoever's
// the jobs that ended then were: the null the links and feedback tests share. Internal to the
// inference.
#include <algorithm>
#include <cmath>

#include "mirage/simulator/Calibration.h"

namespace mirage::calibration {

struct ChanceCount {
  int seen = 0;
  double expected = 0, variance = 0;  // by chance: the sum of the jobs' chances, and its spread

  // One job, beside `running` jobs of which `own` are its user's and `ended` ended in its window;
  // `own_ended`: one of its user's did. Taken as a random draw of `ended` from the `running`,
  // the chance that the draw holds one of the `own` is hypergeometric.
  void add(bool own_ended, int running, int own, int ended) {
    double none_own = 1;  // the chance that the draw misses every one of the `own`
    for (int i = 0; i < ended; ++i)
      none_own *= std::max(0.0, static_cast<double>(running - own - i) / (running - i));
    const double p = 1 - none_own;
    seen += own_ended;
    expected += p;
    variance += p * (1 - p);
  }
  // More seen than chance gives by more than kLinkSigmas standard deviations of the chance count.
  bool stands_out() const { return seen - expected > kLinkSigmas * std::sqrt(variance); }
};

}  // namespace mirage::calibration
