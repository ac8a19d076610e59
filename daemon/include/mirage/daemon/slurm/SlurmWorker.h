#pragma once
// The one thread that talks to Slurm: tasks run in order, one at a time. stop() lets the running
// task finish and drops the rest (a dropped submission's intent is already durable, so the next
// start settles it by its tag).
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "mirage/daemon/slurm/SlurmClient.h"

namespace mirage::daemon {

class SlurmWorker {
 public:
  explicit SlurmWorker(SlurmClient& client) : client_(client) {}
  ~SlurmWorker() { stop(); }
  void start();
  void post(std::function<void(SlurmClient&)> task);
  void stop();
  std::size_t queued() const;

 private:
  void loop();
  SlurmClient& client_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void(SlurmClient&)>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mirage::daemon
