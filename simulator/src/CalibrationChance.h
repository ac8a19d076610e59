#pragma once
// A mark a job leaves beside its user's earlier job (a start as that job ended, a submission
// minutes after it), counted against what the log's own starts and ends give by chance, whoever's
// the jobs that ended then were: the null the links and feedback tests share. Internal to the
// inference.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "CalibrationLog.h"
#include "mirage/simulator/Calibration.h"

namespace mirage::calibration {

// The log's jobs running at some moment of [t - window, t], asked for instants t in order: those
// started before t and not ended before t - window.
class RunningSweep {
 public:
  explicit RunningSweep(const LogView& log) : by_start_(jobs_by_start(log)) {}
  // The log's jobs by their start.
  const std::vector<const Job*>& by_start() const { return by_start_; }
  // t no earlier than the last asked, and window no longer.
  const std::vector<const Job*>& at(Seconds t, Seconds window) {
    const auto ends_later = [](const Job* a, const Job* b) { return a->end > b->end; };
    for (; next_ < by_start_.size() && by_start_[next_]->start < t; ++next_) {
      running_.push_back(by_start_[next_]);
      std::push_heap(running_.begin(), running_.end(), ends_later);
    }
    while (!running_.empty() && running_.front()->end < t - window) {
      std::pop_heap(running_.begin(), running_.end(), ends_later);
      running_.pop_back();
    }
    return running_;
  }

 private:
  std::vector<const Job*> by_start_;
  std::vector<const Job*> running_;  // a min-heap by end
  std::size_t next_ = 0;
};

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
