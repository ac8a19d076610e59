#include "mirage/agents/WaitPredictor.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/core/Error.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage {

Seconds interpolate_quantile(const WaitQuantiles& w, double q) {
  if (q <= kWaitLevels.front()) return w.front();
  for (std::size_t k = 1; k < kWaitLevels.size(); ++k)
    if (q <= kWaitLevels[k]) {
      const double f = (q - kWaitLevels[k - 1]) / (kWaitLevels[k] - kWaitLevels[k - 1]);
      return w[k - 1] +
             static_cast<Seconds>(std::llround(f * static_cast<double>(w[k] - w[k - 1])));
    }
  return w.back();
}

Seconds WaitPredictor::quantile(const QueueSnapshot& queue, const ForecastJob& job,
                                double q) const {
  return interpolate_quantile(predict(queue, job), q);
}

WaitQuantiles WaitPredictor::predict_logged(const QueueSnapshot& queue, const Job& job) const {
  return predict(queue, ForecastJob{job.nodes, job.gpus_per_node, job.time_limit});
}

WaitQuantiles WaitPredictor::predict_in_partition(const QueueSnapshot& queue,
                                                  const ForecastJob& job,
                                                  const std::string&) const {
  return predict(queue, job);
}

IntervalCoverage check_wait_intervals(const WaitPredictor& p, const Trace& trace,
                                      const ClusterSpec& cluster, int chain_nodes, Seconds from,
                                      Seconds to) {
  IntervalCoverage c;
  c.from = from;
  c.to = to;
  std::vector<std::size_t> picked;
  std::vector<Seconds> times;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& job = trace.jobs[i];
    if (job.submit < from || job.submit >= to || !p.speaks_for(job, chain_nodes)) continue;
    picked.push_back(i);
    times.push_back(job.submit);
  }
  std::size_t in50 = 0, in90 = 0;
  for_each_logged_queue(trace.jobs, times, cluster.nodes, cluster.gpus_per_node, cluster.priority,
                        [&](std::size_t i, const QueueSnapshot& queue) {
                          const Job& job = trace.jobs[picked[i]];
                          const WaitQuantiles w = p.predict_logged(queue, job);
                          const Seconds real = job.wait();
                          in50 += real >= w[2] && real <= w[4];
                          in90 += real >= w[0] && real <= w[6];
                        });
  c.jobs = picked.size();
  if (c.jobs == 0) return c;
  c.in_50 = static_cast<double>(in50) / static_cast<double>(c.jobs);
  c.in_90 = static_cast<double>(in90) / static_cast<double>(c.jobs);
  return c;
}

std::shared_ptr<const WaitPredictor> read_wait_predictor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot read the wait distribution or wait model");
  // A wait model is a JSON object; a binned distribution is TOML (comments and keys).
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  if (first == '{') return std::make_shared<const WaitModel>(read_wait_model(path));
  return std::make_shared<const BinnedWaitPredictor>(read_wait_distribution(path));
}

}  // namespace mirage
