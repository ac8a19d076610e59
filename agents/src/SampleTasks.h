#pragma once
// Runs independent per-sample work on all cores: start states are built in time order on the
// calling thread (the base replay only moves forward), a batch at a time to bound memory, and
// the tasks of a batch run on `threads` threads. The first exception is rethrown here.
#include <functional>
#include <vector>

#include "mirage/agents/EpisodeStarts.h"

namespace mirage {

// `start` is the sample's start state: with one task a sample the task's own, to consume (move
// from) without a fork; with more, shared by the sample's tasks, to read (a task that steps a
// replay forks `start.sim`).
using SampleTask = std::function<void(std::size_t sample, std::size_t task, EpisodeStart& start)>;
using TaskProgress = std::function<void(std::size_t done, std::size_t total)>;

// `progress` counts episodes, `episodes_per_task` of them in each task.
void for_each_sample_task(EpisodeStarts& starts, const std::vector<Seconds>& times,
                          std::size_t tasks_per_sample, int threads, const SampleTask& run,
                          const TaskProgress& progress, std::size_t episodes_per_task = 1);

}  // namespace mirage
