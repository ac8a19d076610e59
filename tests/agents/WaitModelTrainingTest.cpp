// The wait model fitted in LibTorch (the plugin's train_wait_model): it learns waits that depend
// on the queue, which a constant cannot, and the file it makes decides in under a millisecond
// without LibTorch.
#include <gtest/gtest.h>
#include <time.h>

#include <random>

#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/agents/learned/WaitModelTraining.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage {
namespace {

constexpr Seconds kT0 = 1'700'006'400;  // a midnight

// Every 6 hours, on a 16-node machine: half the time a 16-node job takes the whole machine for
// 5 hours; an hour later a small job arrives and waits for it (4 h and a few minutes), or, with
// the machine free, a few minutes only. Its wait is in the queue it meets, nowhere else.
Trace blocked_or_free(int episodes, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution blocked(0.5);
  std::uniform_int_distribution<Seconds> noise(0, 20 * kMinute);
  std::uniform_int_distribution<int> size(1, 3);
  Trace t;
  t.source = "blocked-or-free";
  t.machine_nodes = 16;
  JobId id = 1;
  for (int e = 0; e < episodes; ++e) {
    const Seconds at = kT0 + e * 6 * kHour;
    const bool block = blocked(rng);
    if (block) {
      Job b;
      b.id = id++;
      b.submit = at;
      b.start = at;
      b.end = at + 5 * kHour;
      b.nodes = 16;
      b.time_limit = 5 * kHour;
      t.jobs.push_back(b);
    }
    Job j;
    j.id = id++;
    j.submit = at + kHour;
    j.start = j.submit + (block ? 4 * kHour : 0) + noise(rng);
    j.end = j.start + 30 * kMinute;
    j.nodes = size(rng);
    j.time_limit = kHour;
    t.jobs.push_back(j);
  }
  return t;
}

ClusterSpec machine16() {
  ClusterSpec c;
  c.nodes = 16;
  c.priority = PriorityParameters::unweighted();
  return c;
}

WaitModel fitted(const Trace& t, Seconds to, const std::string& architecture, int max_epochs) {
  const WaitTrainingSet data = wait_training_set(t, machine16(), kT0, to, 0);
  WaitModelTraining settings;
  settings.architecture = architecture;
  settings.hidden = 32;
  settings.patience = 20;
  settings.max_epochs = max_epochs;
  const WaitModelFit fit = learned::train_wait_model(data, settings, {});
  WaitModelInfo info;
  info.from = kT0;
  info.to = to;
  info.jobs = data.rows;
  info.machine_nodes = 16;
  return WaitModel(info, fit.net);
}

TEST(WaitModelTraining, LearnsWaitsThatDependOnTheQueueWhichAConstantCannot) {
  const Trace t = blocked_or_free(500, 3);
  const Seconds split = kT0 + 400 * 6 * kHour;  // fitted before, judged after
  // The constant: the fitted jobs' waits at each level, whatever the queue.
  std::vector<Seconds> fitted_waits;
  for (const Job& j : t.jobs)
    if (j.submit < split) fitted_waits.push_back(j.wait());
  std::sort(fitted_waits.begin(), fitted_waits.end());
  WaitQuantiles constant{};
  for (std::size_t k = 0; k < constant.size(); ++k)
    constant[k] = fitted_waits[static_cast<std::size_t>(
        kWaitLevels[k] * static_cast<double>(fitted_waits.size() - 1))];
  for (const std::string arch : {"mlp", "moe"}) {
    const WaitModel model = fitted(t, split, arch, 150);
    std::vector<Seconds> real, times;
    std::vector<std::size_t> judged;
    for (std::size_t i = 0; i < t.jobs.size(); ++i)
      if (t.jobs[i].submit >= split) judged.push_back(i), times.push_back(t.jobs[i].submit);
    std::vector<WaitQuantiles> stated;
    for_each_logged_queue(
        t.jobs, times, 16, 0, PriorityParameters::unweighted(),
        [&](std::size_t k, const QueueSnapshot& q) {
          const Job& j = t.jobs[judged[k]];
          stated.push_back(model.predict(q, ForecastJob{j.nodes, 0, j.time_limit}));
          real.push_back(j.wait());
        });
    const WaitScore learned = score_quantiles(real, stated);
    const WaitScore flat = score_quantiles(real, std::vector<WaitQuantiles>(real.size(), constant));
    EXPECT_LT(*learned.pinball_h, 0.5 * *flat.pinball_h) << arch;
    EXPECT_LT(learned.median_abs_error_h, 0.5 * flat.median_abs_error_h) << arch;
    EXPECT_GT(*learned.in_90, 0.7) << arch;
  }
}

TEST(WaitModelTraining, AFittedModelDecidesInUnderAMillisecondWithoutLibTorch) {
  const Trace t = blocked_or_free(300, 5);
  const WaitModel model = fitted(t, kT0 + 300 * 6 * kHour, "moe", 5);  // any weights will do
  // A busy queue of a large machine: 300 pending jobs behind 80 running.
  QueueSnapshot q;
  q.time = kT0;
  q.total_nodes = 88;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> nodes(1, 8);
  std::uniform_int_distribution<Seconds> limit(kHour, 48 * kHour);
  for (int i = 0; i < 80; ++i)
    q.running.push_back({.time_limit = limit(rng), .nodes = 1, .run = limit(rng) / 3});
  for (int i = 0; i < 300; ++i)
    q.pending.push_back({.time_limit = limit(rng), .nodes = nodes(rng), .waited = limit(rng) / 4});
  constexpr int kCalls = 200;
  Seconds sink = 0;
  // The thread's CPU time: what a decision costs, not how long other processes held the core.
  const auto cpu_ms = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  const double t0 = cpu_ms();
  for (int i = 0; i < kCalls; ++i)
    sink += model.predict(q, ForecastJob{1 + i % 8, 0, 48 * kHour})[3];
  const double ms = (cpu_ms() - t0) / kCalls;
  EXPECT_LT(ms, 1.0) << "a prediction took " << ms << " ms";
  EXPECT_GE(sink, 0);
}

}  // namespace
}  // namespace mirage
