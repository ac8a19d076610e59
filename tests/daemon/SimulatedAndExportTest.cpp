// The simulator backend behind the SlurmClient seam, and the trace export read back by the
// trace reader.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "TestSupport.h"
#include "mirage/core/Error.h"
#include "mirage/daemon/slurm/SimulatedSlurmClient.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/StoreLock.h"
#include "mirage/daemon/store/TraceExport.h"
#include "mirage/traces/Trace.h"

namespace mirage::daemon {
namespace {

const char* kTrace =
    "; MaxNodes: 4\n; MaxProcs: 16\n; UnixStartTime: 1700000000\n"
    "1 0 0 3600 16 -1 -1 16 7200 -1 1 1 1 -1 1 1 -1 -1\n"
    "2 60 0 600 4 -1 -1 4 3600 -1 1 2 1 -1 1 1 -1 -1\n"
    "3 120 0 600 4 -1 -1 4 3600 -1 1 3 1 -1 1 1 -1 -1\n";

TEST(SimulatedSlurmClient, RunsTheDaemonsJobsAmongTheTrace) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  SimulatedClusterConfig c;
  c.speed = 1e5;  // ten microseconds a simulated second
  c.warmup = 30;
  c.checkpoint = 60;
  c.user_id = 42;
  SimulatedSlurmClient sim(trace, c);
  EXPECT_EQ(sim.spec().nodes, 4);
  EXPECT_EQ(sim.spec().gpus_per_node, 4);
  const auto parts = sim.load_partitions();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].total_nodes, 4);

  SubmitRequest r;
  r.nodes = 2;
  r.gpus_per_node = 4;
  // Ten hours run for 360 ms of wall time: long enough for the polls below to see it running on
  // a loaded machine (one hour at 1e6x, 3.6 ms, was once missed between two polls).
  constexpr Seconds kLimit = 10 * kHour;
  r.time_limit = kLimit;
  r.name = "x-s0";
  r.comment = "mirage:00000001:1:0:1";
  const JobId id = sim.submit(r);
  // The whole machine is busy with trace job 1 for an hour: ours waits, then runs.
  bool saw_running = false;
  for (const Seconds stop = sim.clock().now() + 3 * kHour;
       !saw_running && sim.clock().now() < stop;) {
    for (const auto& j : sim.load_jobs(0).jobs)
      if (j.id == id) {
        EXPECT_EQ(j.comment, r.comment);
        EXPECT_EQ(j.user_id, 42u);
        saw_running = j.state == SlurmJobState::kRunning;
      }
  }
  ASSERT_TRUE(saw_running);
  sim.signal_job(id, SIGUSR1);  // hand-off: it stops `checkpoint` later
  // Polled at least once whatever the wall clock did meanwhile (a loaded machine once let the
  // whole hour this loop allowed pass before its first poll): a job that ended by its limit
  // instead fails below.
  bool ended = false;
  const Seconds stop = sim.clock().now() + kLimit / 2;
  do {
    for (const auto& j : sim.load_jobs(0).jobs)
      if (j.id == id && is_finished(j.state)) {
        ended = true;
        EXPECT_EQ(j.state, SlurmJobState::kCompleted);
        EXPECT_LT(j.end - j.start, kLimit);  // stopped by the signal, not by its limit
      }
  } while (!ended && sim.clock().now() < stop);
  EXPECT_TRUE(ended);
  r.nodes = 5;
  EXPECT_THROW(sim.submit(r), SlurmError);
  r.nodes = 1;
  r.partition = "other";
  EXPECT_THROW(sim.submit(r), SlurmError);
  EXPECT_GE(sim.counters().job_dumps, 2u);
}

// A restart of the daemon is not a restart of the cluster: jobs submitted before it keep their
// ids, tags, submissions and starts, time does not go back, and new ids do not repeat old ones.
TEST(SimulatedSlurmClient, SimulatedClusterResumesAfterRestart) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  testing::TempDir dir;
  SimulatedClusterConfig c;
  c.speed = 1e5;  // an hour is 36 ms of wall time
  c.warmup = 30;
  c.checkpoint = 60;
  c.user_id = 42;
  c.state_path = dir.file("store.db.simulated-cluster.json");
  SubmitRequest r;
  r.nodes = 2;
  r.gpus_per_node = 4;
  r.time_limit = 2000 * kHour;  // 72 s of wall time: still running however slow the machine
  r.name = "x-s0";
  r.comment = "mirage:00000001:1:0:1";
  JobId running = 0, cancelled = 0;
  SlurmJob before;
  Seconds last_seen = 0;
  {
    SimulatedSlurmClient sim(trace, c);
    running = sim.submit(r);
    r.name = "x-s1";
    r.comment = "mirage:00000001:1:1:1";
    cancelled = sim.submit(r);
    sim.cancel_job(cancelled);
    while (before.state != SlurmJobState::kRunning) {
      for (const auto& j : sim.load_jobs(0).jobs)
        if (j.id == running) before = j;
    }
    last_seen = sim.clock().now();
  }
  SimulatedSlurmClient again(trace, c);
  EXPECT_GE(again.clock().now(), last_seen);
  const JobDump dump = again.load_jobs(0);
  const SlurmJob* after = nullptr;
  const SlurmJob* gone = nullptr;
  for (const auto& j : dump.jobs) {
    if (j.id == running) after = &j;
    if (j.id == cancelled) gone = &j;
  }
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->comment, "mirage:00000001:1:0:1");
  EXPECT_EQ(after->user_id, 42u);
  EXPECT_EQ(after->submit, before.submit);
  EXPECT_EQ(after->start, before.start);
  EXPECT_EQ(after->state, SlurmJobState::kRunning);
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->state, SlurmJobState::kCancelled);
  EXPECT_EQ(gone->comment, "mirage:00000001:1:1:1");
  const JobId next = again.submit(r);
  EXPECT_NE(next, running);
  EXPECT_NE(next, cancelled);
  ASSERT_EQ(again.events().size(), 4u);  // two submissions, a cancellation, and this one
  again.signal_job(running, SIGUSR1);    // the hand-off survives a restart too
  const Seconds stop_by = again.clock().now() + c.checkpoint;
  SimulatedSlurmClient third(trace, c);
  SlurmJob stopped;
  // Polled at least once: a loaded machine can let the whole simulated hour pass before the
  // first look.
  do {
    for (const auto& j : third.load_jobs(0).jobs)
      if (j.id == running) stopped = j;
  } while (!is_finished(stopped.state) && third.clock().now() < stop_by + kHour);
  EXPECT_EQ(stopped.state, SlurmJobState::kCompleted);
  EXPECT_LE(stopped.end, stop_by + 1);
}

// A state file of another trace or machine size is refused, naming the file, not overwritten.
TEST(SimulatedSlurmClient, RefusesTheStateOfAnotherCluster) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  testing::TempDir dir;
  SimulatedClusterConfig c;
  c.speed = 1e5;
  c.warmup = 30;
  c.state_path = dir.file("sim.json");
  { SimulatedSlurmClient sim(trace, c); }
  c.nodes = 3;
  try {
    SimulatedSlurmClient other(trace, c);
    FAIL() << "resumed the state of a 4-node cluster as a 3-node one";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(c.state_path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("move it aside"), std::string::npos) << e.what();
  }
  std::ofstream(c.state_path) << "{ not json";
  c.nodes = 0;
  EXPECT_THROW(SimulatedSlurmClient(trace, c), std::runtime_error);
}

// A simulated cluster over kTrace, calibrated by the file `toml` (written into `dir`), fast enough
// for days to pass in a test, its replay starting after the trace's own jobs.
SimulatedClusterConfig calibrated_cluster(const testing::TempDir& dir, const std::string& toml) {
  SimulatedClusterConfig c;
  c.speed = 2e5;
  c.warmup = 2 * kHour;
  c.calibration = dir.file("tiny.calibration.toml");
  std::ofstream(c.calibration) << toml;
  return c;
}

// One segment of `nodes` nodes for `limit`, as the daemon submits it.
SubmitRequest segment(int nodes, Seconds limit) {
  SubmitRequest r;
  r.nodes = nodes;
  r.time_limit = limit;
  r.comment = "mirage:00000001:1:0:1";
  return r;
}

// What the cluster last reports of job `id`, polled until it is no longer pending or `within` of
// simulated time has passed.
SlurmJob poll_while_pending(SimulatedSlurmClient& sim, JobId id, Seconds within) {
  SlurmJob seen;
  const Seconds stop = sim.clock().now() + within;
  do {
    for (const auto& j : sim.load_jobs(0).jobs)
      if (j.id == id) seen = j;
  } while (seen.state == SlurmJobState::kPending && sim.clock().now() < stop);
  return seen;
}

// The embedded cluster replays the calibrated cluster: the daemon's jobs face the capacity a
// calibration file says other work held.
TEST(SimulatedSlurmClient, TheDaemonsJobsFaceTheCalibratedCapacity) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  testing::TempDir dir;
  // 3 of the 4 nodes held by unseen work until 2023-11-16 (the trace starts on the 14th).
  SimulatedClusterConfig c =
      calibrated_cluster(dir,
                         "[capacity]\nunavailable = [[\"2023-11-14T00:00:00\", 3], "
                         "[\"2023-11-16T00:00:00\", 0]]\n");
  SimulatedSlurmClient sim(trace, c);
  // The held capacity shows as a site's node states would: three nodes out of use.
  EXPECT_EQ(sim.load_partitions().at(0).unavailable_nodes, 3);
  const JobId id = sim.submit(segment(2, kHour));
  const SlurmJob seen = poll_while_pending(sim, id, 4 * kDay);
  ASSERT_NE(seen.start, kUnknownTime);
  EXPECT_GE(seen.start, 1700092800);  // 2023-11-16T00:00:00Z: not before the nodes came back
  c.calibration = dir.file("missing.toml");
  EXPECT_THROW(SimulatedSlurmClient(trace, c), InputError);
}

// The simulator backend infers a calibration once, as the commands do: a second cluster on the
// same trace reads the entry the first saved (simulator/CalibrationCache.h) and replays the same
// machine.
TEST(SimulatedSlurmClient, ReadsTheCalibrationItInferredBeforeFromTheCache) {
  testing::TempDir dir;
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string kept = old ? old : "";
  setenv("XDG_CACHE_HOME", dir.file("cache").c_str(), 1);
  const Trace trace = read_trace(MIRAGE_SOURCE_DIR "/traces/samples/sample-gpu-cluster.swf");
  SimulatedClusterConfig c;
  c.speed = 1e5;
  c.calibration = "infer";
  const std::filesystem::path entries = dir.file("cache/mirage/calibrations");
  const SimulatedSlurmClient first(trace, c);
  ASSERT_EQ(std::distance(std::filesystem::directory_iterator(entries), {}), 1);
  const std::filesystem::path entry = std::filesystem::directory_iterator(entries)->path();
  const auto written = std::filesystem::last_write_time(entry);
  const SimulatedSlurmClient second(trace, c);
  EXPECT_EQ(std::filesystem::last_write_time(entry), written);  // read, not inferred and saved
  EXPECT_EQ(second.spec().user_limits, first.spec().user_limits);
  EXPECT_EQ(second.spec().priority, first.spec().priority);
  // The sample reads no hidden room (it was made with none): none either time.
  EXPECT_FALSE(first.spec().unavailable);
  EXPECT_FALSE(second.spec().unavailable);
  if (old)
    setenv("XDG_CACHE_HOME", kept.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
}

// A calibration's weekly boundaries reach the daemon as slurmctld would show them: each boundary
// to come listed as a reservation of every node, and a job whose limit would run across the next
// one reported as held by it (not BeginTime), until it starts once the boundary has passed.
TEST(SimulatedSlurmClient, ShowsTheCalibratedBoundariesAsReservations) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  testing::TempDir dir;
  // Thursdays at 12:00 UTC; the trace starts on Tuesday 2023-11-14.
  SimulatedSlurmClient sim(trace,
                           calibrated_cluster(dir,
                                              "[boundaries]\nweekly = [[\"2023-11-13T00:00:00\", "
                                              "\"2023-12-31T00:00:00\", [\"Thu 12:00\"]]]\n"));
  const Seconds boundary = 1700136000;  // 2023-11-16T12:00:00Z
  const auto reservations = sim.load_partitions().at(0).reservations;
  ASSERT_EQ(reservations.size(), 2u);  // this week's and next week's, within 14 days
  EXPECT_EQ(reservations[0].start, boundary);
  EXPECT_EQ(reservations[0].end, boundary + 1);
  EXPECT_EQ(reservations[0].nodes, 4);
  EXPECT_EQ(reservations[1].start, boundary + kWeek);
  const JobId id = sim.submit(segment(2, 2 * kDay));  // would run across Thursday noon
  SlurmJob seen;
  for (const auto& j : sim.load_jobs(0).jobs)
    if (j.id == id) seen = j;
  EXPECT_EQ(seen.state, SlurmJobState::kPending);
  EXPECT_EQ(seen.reason, "ReqNodeNotAvail, Reserved for maintenance");
  EXPECT_EQ(seen.accrue, seen.submit);  // it ages while the boundary holds it, as in the replay
  seen = poll_while_pending(sim, id, 4 * kDay);
  EXPECT_EQ(seen.start, boundary);
  EXPECT_EQ(sim.load_partitions().at(0).reservations.at(0).start, boundary + kWeek);
}

// A calibration's down window reaches the daemon as slurmctld shows a partition set DOWN: the
// daemon's job queues, is reported pending for PartitionDown and ages, and starts once the
// partition is up.
TEST(SimulatedSlurmClient, ReportsAJobADownWindowHoldsAsItsPartitionDown) {
  const Trace trace = read_trace_text(kTrace, "tiny.swf");
  testing::TempDir dir;
  SimulatedSlurmClient sim(trace, calibrated_cluster(dir,
                                                     "[down]\nwindows = [[\"2023-11-13T00:00:00\", "
                                                     "\"2023-11-16T00:00:00\"]]\n"));
  const JobId id = sim.submit(segment(1, kHour));
  SlurmJob seen;
  for (const auto& j : sim.load_jobs(0).jobs)
    if (j.id == id) seen = j;
  EXPECT_EQ(seen.state, SlurmJobState::kPending);
  EXPECT_EQ(seen.reason, "PartitionDown");
  EXPECT_EQ(seen.accrue, seen.submit);
  seen = poll_while_pending(sim, id, 4 * kDay);
  EXPECT_GE(seen.start, 1700092800);  // 2023-11-16T00:00:00Z: not before the partition was up
}

TEST(TraceExport, WritesSwfTheReaderReadsBack) {
  std::vector<SlurmJob> jobs;
  for (int i = 0; i < 5; ++i) {
    SlurmJob j;
    j.id = 100 + i;
    j.partition = i == 4 ? "cpu" : "gpu";
    j.submit = 1'700'000'000 + 60 * i;
    j.start = j.submit + 30 * i;
    j.end = j.start + 600;
    j.time_limit = 3600;
    j.nodes = 1 + i % 2;
    j.gpus_per_node = 4;
    j.state = i == 3 ? SlurmJobState::kCancelled : SlurmJobState::kCompleted;
    j.user_id = 1000;
    jobs.push_back(j);
  }
  SlurmJob pending;
  pending.id = 999;
  pending.partition = "gpu";
  pending.submit = 1'700'000'000;
  jobs.push_back(pending);
  std::ostringstream out;
  TraceExportOptions o;
  o.partition = "gpu";
  o.machine_nodes = 8;
  o.gpus_per_node = 4;
  EXPECT_EQ(export_swf(jobs, o, out), 4u);
  const Trace t = read_trace_text(out.str(), "export.swf");
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(t.machine_nodes, 8);
  EXPECT_EQ(t.jobs[1].submit, 1'700'000'060);
  EXPECT_EQ(t.jobs[1].wait(), 30);
  EXPECT_EQ(t.jobs[1].runtime(), 600);
  EXPECT_EQ(t.jobs[1].nodes, 2);
  EXPECT_EQ(t.jobs[1].time_limit, 3600);
}

// Exporting `store` to `out` is refused, naming `out` and `own`, the store's file it is.
void expect_export_refused(const CampaignStore& store, const std::string& out,
                           const std::string& own) {
  try {
    export_store(store, "", out);
    ADD_FAILURE() << out << " was written";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(out), std::string::npos) << what;
    EXPECT_NE(what.find("it is " + own), std::string::npos) << what;
  }
}

// `--out` naming the store, the files beside it or the same file another way (`..`, a symlink,
// a hard link) would truncate the campaigns: refused before anything is written, naming both.
TEST(TraceExport, RefusesToWriteOverTheStoreOrTheFilesBesideIt) {
  testing::TempDir dir;
  const std::string path = dir.file("store.db");
  CampaignStore store(path);
  const auto lock = StoreLock::acquire(path, "the test", 0);
  ASSERT_TRUE(lock);
  const std::string id = store.store_id();
  std::filesystem::create_directory(dir.file("sub"));
  std::filesystem::create_symlink(path, dir.file("link.swf"));
  std::filesystem::create_hard_link(path, dir.file("hard.swf"));
  const std::pair<std::string, std::string> cases[] = {
      {dir.file("sub/../store.db"), path},
      {dir.file("link.swf"), path},
      {dir.file("hard.swf"), path},
      {dir.file("sub/../store.db-wal"), path + "-wal"},
      {dir.file("sub/../store.db.lock"), StoreLock::lock_path(path)}};
  const auto size = std::filesystem::file_size(path);
  for (const auto& [out, own] : cases) expect_export_refused(store, out, own);
  EXPECT_EQ(std::filesystem::file_size(path), size);
  EXPECT_EQ(store.store_id(), id);
  EXPECT_EQ(export_store(store, "", dir.file("trace.swf")).jobs, 0u);
}

// A store reached through a symlink: SQLite keeps its -wal and journal beside the real file, so
// `--out` naming those is refused too (not only the names beside the link).
TEST(TraceExport, RefusesToWriteOverTheFilesBesideASymlinkedStoresRealFile) {
  testing::TempDir dir;
  std::filesystem::create_directory(dir.file("data"));
  const std::string real = dir.file("data/store.db");
  { CampaignStore made(real); }
  std::filesystem::create_symlink(real, dir.file("store.db"));
  CampaignStore store(dir.file("store.db"));
  const auto canonical_real = std::filesystem::weakly_canonical(real).string();
  const std::pair<std::string, std::string> cases[] = {
      {real + "-wal", canonical_real + "-wal"}, {real + "-journal", canonical_real + "-journal"}};
  for (const auto& [out, own] : cases) expect_export_refused(store, out, own);
  EXPECT_EQ(export_store(store, "", dir.file("trace.swf")).jobs, 0u);
}

}  // namespace
}  // namespace mirage::daemon
