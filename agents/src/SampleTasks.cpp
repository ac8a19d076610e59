#include "SampleTasks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace mirage {

void for_each_sample_task(EpisodeStarts& starts, const std::vector<Seconds>& times,
                          std::size_t tasks_per_sample, int threads, const SampleTask& run,
                          const TaskProgress& progress, std::size_t episodes_per_task) {
  const int n_threads =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t batch = static_cast<std::size_t>(n_threads) * 4;
  const std::size_t total = times.size() * tasks_per_sample * episodes_per_task;
  std::atomic<std::size_t> done{0};
  std::mutex mutex;  // guards progress and failure
  for (std::size_t b0 = 0; b0 < times.size(); b0 += batch) {
    const std::size_t b1 = std::min(times.size(), b0 + batch);
    std::vector<EpisodeStart> batch_starts;
    for (std::size_t i = b0; i < b1; ++i) batch_starts.push_back(starts.at(times[i]));
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    auto worker = [&] {
      try {
        for (std::size_t t; (t = next.fetch_add(1)) < batch_starts.size() * tasks_per_sample;) {
          const std::size_t s = t / tasks_per_sample;
          run(b0 + s, t % tasks_per_sample, batch_starts[s]);
          const std::size_t d = done += episodes_per_task;
          if (progress) {
            std::lock_guard lock(mutex);
            progress(d, total);
          }
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < n_threads; ++i) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace mirage
