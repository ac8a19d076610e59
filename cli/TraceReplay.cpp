#include "TraceReplay.h"

#include <fmt/format.h>

#include <chrono>

#include "EmbeddedSample.h"
#include "mirage/core/Error.h"
#include "mirage/simulator/Simulator.h"

namespace mirage::cli {

Trace read_trace_or_sample(const std::string& path, const TraceOptions& trace_options) {
  return path.empty() ? read_trace_text(embedded_sample_trace(), embedded_sample_name(),
                                        trace_options.to_read_options())
                      : read_trace(path, trace_options.to_read_options());
}

TraceReplay prepare_replay(const std::string& path, const TraceOptions& trace_options,
                           const ClusterOptions& cluster) {
  return prepare_replay(read_trace_or_sample(path, trace_options), trace_options, cluster);
}

TraceReplay prepare_replay(Trace trace, const TraceOptions& trace_options,
                           const ClusterOptions& cluster) {
  TraceReplay r;
  r.trace = std::move(trace);
  r.spec = cluster.to_spec(r.trace);
  const Calibration applied = cluster.calibrate(r.trace, r.spec);
  if (applied.priority) r.calibrated_waits = applied.priority->replay_waits;
  std::vector<Job> kept;
  kept.reserve(r.trace.jobs.size());
  for (const Job& j : r.trace.jobs) {
    const bool too_big =
        j.nodes > r.spec.nodes || (r.spec.allocation == AllocationMode::kGpuGranular &&
                                   j.gpus_per_node > r.spec.gpus_per_node);
    if (j.nodes <= 0)
      throw InputError({r.trace.source, 0, "nodes"},
                       fmt::format("job {} has a non-positive size ({} nodes)", j.id, j.nodes));
    if (too_big && !trace_options.lenient)
      throw InputError(
          {r.trace.source, 0, "nodes"},
          fmt::format("job {} asks for {} nodes x {} GPUs but the machine has {} x {}; "
                      "use a larger --cluster-nodes, or --lenient to drop such jobs",
                      j.id, j.nodes, j.gpus_per_node, r.spec.nodes, r.spec.gpus_per_node));
    if (too_big) {
      ++r.oversized;
      continue;
    }
    kept.push_back(j);
  }
  r.trace.jobs = std::move(kept);
  if (r.calibrated_waits && r.calibrated_waits->size() != r.trace.jobs.size())
    r.calibrated_waits.reset();  // not the jobs that replay ran
  if (r.trace.jobs.empty())
    throw InputError({r.trace.source, 0, ""},
                     fmt::format("no jobs to simulate ({} rows skipped while reading, {} larger "
                                 "than the machine dropped)",
                                 r.trace.report.skipped_total(), r.oversized));
  return r;
}

std::shared_ptr<const std::vector<Seconds>> replayed_waits(const TraceReplay& replay,
                                                           double& wall) {
  wall = 0;
  if (replay.calibrated_waits) return replay.calibrated_waits;
  auto jobs = std::make_shared<const std::vector<SimJobSpec>>(to_sim_jobs(replay.trace.jobs));
  Simulator sim(replay.spec, jobs);
  sim.set_recording(false);
  const auto t0 = std::chrono::steady_clock::now();
  sim.run_to_completion();
  wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::make_shared<const std::vector<Seconds>>(sim.waits(replay.trace.jobs.size()));
}

}  // namespace mirage::cli
