#include "mirage/daemon/slurm/SlurmWorker.h"

#include <spdlog/spdlog.h>

namespace mirage::daemon {

void SlurmWorker::start() {
  thread_ = std::thread([this] { loop(); });
}

void SlurmWorker::post(std::function<void(SlurmClient&)> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void SlurmWorker::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t SlurmWorker::queued() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

void SlurmWorker::loop() {
  for (;;) {
    std::function<void(SlurmClient&)> task;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    try {
      task(client_);
    } catch (const std::exception& e) {
      spdlog::error("slurm thread: a task failed: {}", e.what());
    }
  }
}

}  // namespace mirage::daemon
