#pragma once
// The pieces of the faithfulness validation (docs/simulator.md): a small workload cut
// from a real trace and time-compressed, the real controller's record of it (jobcomp/filetxt),
// the slurm.conf both sides share, and the figures that compare a simulated run with the real one.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/core/Time.h"

namespace mirage::validation {

// One job of the replayed workload. Times are compressed seconds; limit_s is whole minutes
// (sbatch -t takes minutes) and runtime_s <= limit_s, so Slurm never kills a job.
struct WorkloadJob {
  int id = 0;                 // 0..N-1 in submit order; the Slurm job name is "v<id>"
  Seconds submit_offset = 0;  // seconds after the replay's t0
  int nodes = 1;
  Seconds limit = 60;
  Seconds runtime = 2;
  JobId trace_id = 0;  // the job in the source trace, for traceability
};

struct CutOptions {
  std::size_t jobs = 300;
  Seconds from = 0;         // the window starts at the first job submitted at or after this instant
  double compress = 600;    // every duration and submit gap is divided by this
  int max_nodes = 4;        // node counts are mapped to min(nodes, max_nodes)
  Seconds min_runtime = 2;  // floor, so that Slurm's one-second granularity does not dominate
  Seconds max_runtime = 20;  // cap on the compressed runtime: bounds the replay's length
  Seconds limit_margin = 2;  // runtime <= limit - margin: no job races its own time limit
};

struct CutReport {
  std::size_t trace_jobs = 0;
  std::map<std::string, std::size_t> skipped;  // reason -> trace jobs in the window left out
  Seconds first_submit = 0;                    // Unix seconds, real time
  Seconds last_submit = 0;
  std::size_t runtime_floored = 0;  // jobs raised to min_runtime
  std::size_t runtime_capped = 0;   // jobs lowered to max_runtime or to limit - margin
  std::size_t nodes_clipped = 0;    // jobs with more than max_nodes nodes
};

// Cuts `options.jobs` consecutive usable jobs (started, with a time limit and a runtime) from a
// trace sorted by submit time and compresses them. Throws InputError when the trace has too few.
std::vector<WorkloadJob> cut_workload(const std::vector<Job>& trace, const CutOptions& options,
                                      CutReport* report);

// CSV with header "id,submit_offset_s,nodes,limit_s,runtime_s,trace_id"; '#' lines are comments.
void write_workload_csv(const std::string& path, const std::vector<WorkloadJob>& jobs,
                        const std::vector<std::string>& comments);
std::vector<WorkloadJob> read_workload_csv(const std::string& path);

// What the real controller did with one workload job, in seconds after t0.
struct RealJob {
  int id = 0;
  long slurm_id = 0;
  Seconds submit = 0;
  Seconds start = 0;
  Seconds end = 0;
  std::string state;  // JobState= from jobcomp: COMPLETED expected
};

// Reads a jobcomp/filetxt file (times in UTC, as cluster.sh starts the controller with TZ=UTC) and
// keeps the records named "v<id>" of the workload; throws InputError naming the jobs missing.
std::vector<RealJob> read_jobcomp(const std::string& path, Seconds t0,
                                  const std::vector<WorkloadJob>& workload);
// CSV "id,slurm_id,submit_s,start_s,end_s,state".
void write_real_csv(const std::string& path, const std::vector<RealJob>& jobs);
std::vector<RealJob> read_real_csv(const std::string& path);

// How close a simulated run is to the real one.
struct Agreement {
  std::size_t jobs = 0;
  double mean_abs_error = 0;  // |sim start - real start|, seconds
  double median_abs_error = 0;
  double p90_abs_error = 0;
  double max_abs_error = 0;
  double mean_error = 0;       // signed: > 0 when the simulator starts jobs later
  std::size_t pairs = 0;       // job pairs whose real starts are more than 1 s apart
  double order_agreement = 0;  // share of those pairs in the same order (sim ties count half)
  double mean_wait_real = 0;
  double mean_wait_sim = 0;
  Seconds makespan_real = 0;  // last end, seconds after t0
  Seconds makespan_sim = 0;
};

// One job as the simulator ran it, seconds after t0.
struct SimOutcome {
  Seconds submit = 0;
  Seconds start = kUnknownTime;
  Seconds end = kUnknownTime;
};

// `sim` is indexed like `real`. Pairs of jobs whose real starts are at most `tie_window` seconds
// apart are left out of the order agreement (their order is down to sub-second timing).
Agreement compare_starts(const std::vector<RealJob>& real, const std::vector<SimOutcome>& sim,
                         Seconds tie_window = 1);

}  // namespace mirage::validation
