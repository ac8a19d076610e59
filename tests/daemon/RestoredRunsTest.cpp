// A store restored from a copy taken before segment k was submitted, after segment k (and maybe
// more) ran and ended: the job is gone from the queue, so accounting, else its output file, says
// it ran. It is adopted as the segment's attempt and the campaign goes on from how it ended;
// the segment is never submitted a second time.
#include <gtest/gtest.h>
#include <utime.h>

#include <fstream>
#include <system_error>

#include "TestSupport.h"
#include "mirage/daemon/slurm/SacctLookup.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;

ControllerConfig restore_config() {
  ControllerConfig c;
  c.fallback_chain = false;  // each segment submitted when its predecessor ends
  c.reconcile_delay = 5;
  c.fate_retry = 60;
  return c;
}

// Segment 0 submitted and running: the store is copied then.
struct Restorable {
  explicit Restorable(int segments, CampaignRequest r = simple_request()) : h(restore_config()) {
    r.segments = segments;
    id = h.controller->add(r).spec.id;
    h.tick();
    jobs.push_back(h.job_of(id, 0));
    h.slurm.start(jobs[0]);
    h.tick();
    backup = h.copy_store();
  }
  // Segment k ends as `end` (the next one submitted and started, unless it is the last to run),
  // with the daemon that knew them still running.
  void end_segment(int k, bool next_runs, SlurmJobState end = SlurmJobState::kCompleted) {
    h.slurm.finish(jobs[static_cast<std::size_t>(k)], end, end == SlurmJobState::kFailed ? 1 : 0);
    if (!next_runs) return;
    h.tick();
    jobs.push_back(h.job_of(id, k + 1));
    h.slurm.start(jobs.back());
    h.tick();
  }
  // slurmctld forgets every ended job (MinJobAge), the store is restored from the copy, and the
  // restarted daemon makes `ticks` passes.
  void restore(int ticks = 6) {
    for (JobId j : jobs)
      if (const SlurmJob* job = h.slurm.find(j); job && is_finished(job->state)) h.slurm.forget(j);
    h.clock.advance(600);
    h.restore_store(backup);
    for (int i = 0; i < ticks; ++i) {
      h.tick();
      h.clock.advance(30);
    }
  }
  std::size_t submitted(int k) const { return h.slurm.submissions_tagged(id, k).size(); }

  Harness h;
  std::int64_t id = 0;
  std::vector<JobId> jobs;
  std::string backup;
};

TEST(StoreSurvival, ARestoredStoreAdoptsTheSegmentThatRanAndEndedUnseen) {
  Restorable c(3);
  c.h.slurm.set_accounting(true);
  c.end_segment(0, true);
  c.end_segment(1, false);  // segment 1 ran and ended after the copy
  c.restore();
  EXPECT_EQ(c.submitted(1), 1u) << "segment 1 ran unseen and was submitted again";
  EXPECT_EQ(c.h.job_of(c.id, 1), c.jobs[1]);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.state, SegmentState::kDone);
  EXPECT_EQ(c.submitted(2), 1u) << "the campaign did not go on to segment 2";
  EXPECT_EQ(c.h.controller->counters().earlier_runs, 1u);
  const auto history = c.h.store->submissions(c.id);
  ASSERT_GE(history.size(), 2u);
  EXPECT_NE(history[1].reason.find("ran while the store did not know it"), std::string::npos)
      << history[1].reason;
  EXPECT_EQ(history[1].job, c.jobs[1]);
  EXPECT_EQ(c.h.store->value(rerun_check_key(c.id)), "") << "accounting answered: checked";
}

TEST(StoreSurvival, ARestoredStoreAdoptsTwoSegmentsThatRanUnseenInARow) {
  Restorable c(4);
  c.h.slurm.set_accounting(true);
  c.end_segment(0, true);
  c.end_segment(1, true);
  c.end_segment(2, false);
  c.restore(8);
  EXPECT_EQ(c.submitted(1), 1u);
  EXPECT_EQ(c.submitted(2), 1u) << "segment 2 ran unseen and was submitted again";
  EXPECT_EQ(c.h.job_of(c.id, 2), c.jobs[2]);
  EXPECT_EQ(c.h.seg(c.id, 2).seg.state, SegmentState::kDone);
  EXPECT_EQ(c.submitted(3), 1u);
}

// A site whose accounting keeps no comment (Slurm 22.05 without AccountingStoreFlags=job_comment)
// shows no tag: the job is the segment's by its name, submitted after the campaign began.
TEST(StoreSurvival, ARestoredStoreFindsTheUnseenRunByItsNameWhereAccountingKeepsNoComment) {
  Restorable c(3);
  c.h.slurm.set_accounting(true);
  c.h.slurm.set_accounting_keeps_comments(false);
  c.end_segment(0, true);
  c.end_segment(1, false);
  c.restore();
  EXPECT_EQ(c.submitted(1), 1u) << "segment 1 ran unseen and was submitted again";
  EXPECT_EQ(c.h.seg(c.id, 1).seg.state, SegmentState::kDone);
  EXPECT_EQ(c.submitted(2), 1u);
}

// No accounting: the output file slurmd created when segment 1's script started (its name holds
// the job's name, which holds the segment) says it ran.
// A campaign whose segments write their output to DIR/%x-%j.out: the job's name holds the segment.
CampaignRequest named_output_request(const testing::TempDir& out) {
  auto r = simple_request();
  r.script = "#!/bin/bash\n#SBATCH --output=" + out.file("%x-%j.out") + "\nsleep 20\n";
  return r;
}

TEST(StoreSurvival, ARestoredStoreWithoutAccountingFindsTheUnseenRunByItsOutputFile) {
  testing::TempDir out;
  Restorable c(3, named_output_request(out));
  c.end_segment(0, true);
  const std::string file =
      out.file("train-s1-" + c.h.store->store_id() + "-" + std::to_string(c.jobs[1]) + ".out");
  std::ofstream(file) << "step 1\n";
  const utimbuf at{c.h.clock.now(), c.h.clock.now()};
  ASSERT_EQ(::utime(file.c_str(), &at), 0);
  c.end_segment(1, false);
  c.restore();
  EXPECT_EQ(c.submitted(1), 1u) << "segment 1 ran unseen and was submitted again";
  EXPECT_EQ(c.h.job_of(c.id, 1), c.jobs[1]);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.state, SegmentState::kDone);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.end_time, at.modtime);
  EXPECT_NE(c.h.seg(c.id, 1).message.find(file), std::string::npos) << c.h.seg(c.id, 1).message;
  EXPECT_EQ(c.submitted(2), 1u);
}

// The same without the file: segment 1 never started, and is submitted (checked, not a guess).
TEST(StoreSurvival, ARestoredStoreWithoutAccountingOrOutputFileSubmitsTheSegment) {
  testing::TempDir out;
  Restorable c(3, named_output_request(out));
  c.end_segment(0, false);
  c.restore();
  EXPECT_EQ(c.submitted(1), 1u);
  EXPECT_EQ(c.h.store->value(rerun_check_key(c.id)), "");
}

// The output directory cannot be read (here a file where it should be, which fails as root
// too; a listing that fails part-way on NFS is told the same way): its files could not tell,
// and the submission says so. A directory that does not exist holds no earlier run.
TEST(StoreSurvival, AnOutputDirectoryThatCannotBeReadLeavesTheSubmissionUnchecked) {
  testing::TempDir out;
  const std::string not_a_directory = out.file("outputs");
  std::ofstream(not_a_directory) << "a file\n";
  auto unreadable = simple_request(1, kHour, "unreadable");
  unreadable.script = "#!/bin/bash\n#SBATCH --output=" + not_a_directory + "/%x-%j.out\nsleep 20\n";
  auto absent = simple_request(1, kHour, "absent");
  absent.script = "#!/bin/bash\n#SBATCH --output=" + out.file("none") + "/%x-%j.out\nsleep 20\n";
  Harness h(restore_config());
  const auto unread = h.controller->add(unreadable).spec.id;
  const auto empty = h.controller->add(absent).spec.id;
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(unread, 0).size(), 1u);
  const std::string note = h.store->value(rerun_check_key(unread));
  EXPECT_NE(note.find("no accounting"), std::string::npos) << note;
  EXPECT_NE(note.find(not_a_directory), std::string::npos) << note;
  EXPECT_NE(note.find(std::make_error_code(std::errc::not_a_directory).message()),
            std::string::npos)
      << note;
  EXPECT_EQ(h.slurm.submissions_tagged(empty, 0).size(), 1u);
  EXPECT_EQ(h.store->value(rerun_check_key(empty)), "");
}

// Segment 1 ran unseen and failed: that is its first attempt, and the retry rules go on from it.
TEST(StoreSurvival, ARestoredStoreRetriesTheSegmentThatFailedUnseen) {
  Restorable c(3);
  c.h.slurm.set_accounting(true);
  c.end_segment(0, true);
  c.end_segment(1, false, SlurmJobState::kFailed);
  c.restore();
  const auto tries = c.h.slurm.submissions_tagged(c.id, 1);
  ASSERT_EQ(tries.size(), 2u) << "the failed run was not followed by exactly one retry";
  EXPECT_EQ(JobTag::parse(tries[1].request.comment)->attempt, 2);
  EXPECT_EQ(c.h.seg(c.id, 1).seg.attempts, 2);
  EXPECT_EQ(c.h.job_of(c.id, 1), tries[1].job);
  EXPECT_EQ(c.submitted(2), 0u);
}

// Neither source can tell (no accounting; slurm-%j.out names no segment): submitted as before,
// said once in the log and in `campaign show`.
TEST(StoreSurvival, ASubmissionThatCannotBeCheckedForAnUnseenRunSaysSo) {
  Harness h(restore_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const std::string note = h.store->value(rerun_check_key(id));
  EXPECT_NE(note.find("no accounting"), std::string::npos) << note;
  EXPECT_NE(note.find("does not name the segment"), std::string::npos) << note;
  h.slurm.set_accounting(true);
  h.slurm.start(h.job_of(id, 0));
  h.slurm.finish(h.job_of(id, 0));
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
  EXPECT_EQ(h.store->value(rerun_check_key(id)), "") << "checked once accounting answers";
}

TEST(StoreSurvival, OneAccountingSearchATickForEverySegmentAboutToBeSubmitted) {
  Harness h(restore_config());
  h.slurm.set_accounting(true);
  for (const char* name : {"alpha", "beta", "gamma"}) {
    auto r = simple_request(2);
    r.name = name;
    h.controller->add(r);
  }
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 3u);
  EXPECT_EQ(h.slurm.counters().accounting_searches, 1u);
  ASSERT_EQ(h.slurm.accounting_searches().size(), 1u);
  const auto& names = h.slurm.accounting_searches()[0].names;
  const std::string store = "-" + h.store->store_id();
  EXPECT_EQ(names,
            (std::vector<std::string>{"alpha-s0" + store, "beta-s0" + store, "gamma-s0" + store}));
  h.tick();  // nothing to submit: nothing asked
  EXPECT_EQ(h.slurm.counters().accounting_searches, 1u);
}

// The site's sacct, asked once for every name since the earliest campaign's start; its records
// carry the job's name and comment (the tag).
TEST(SacctSearch, AsksOnceByNameAndTimeAndReadsNamesAndComments) {
  testing::TempDir dir;
  const std::string args = dir.file("args");
  SacctSettings settings;
  settings.program = testing::fake_program(
      dir, "sacct",
      "echo \"$@\" > " + args +
          "\necho '712|0|COMPLETED|1700000000|1700000005|1700000015|0:0|train-s1|"
          "mirage:0a1b2c3d:4:1:1'\n"
          "echo '713|0|FAILED|1700000100|1700000105|1700000115|1:0|other|a|b'\n");
  AccountingSearch search;
  search.since = 1'700'000'000;
  search.names = {"train-s1"};
  const AccountedJobs found = search_accounted_jobs(settings, search);
  ASSERT_TRUE(found.jobs) << found.why;
  ASSERT_EQ(found.jobs->size(), 1u) << "a record of another name was kept";
  EXPECT_EQ(found.jobs->at(0).name, "train-s1");
  EXPECT_EQ(found.jobs->at(0).comment, "mirage:0a1b2c3d:4:1:1");
  std::ifstream in(args);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("-S 2023-11-14T22:13:20 -E now"), std::string::npos) << line;
  EXPECT_NE(line.find("--name=train-s1"), std::string::npos) << line;
  std::string why;
  const auto comment = parse_sacct_line("713|0|FAILED|1|2|3|1:0|other|a|b", &why);
  ASSERT_TRUE(comment) << why;
  EXPECT_EQ(comment->comment, "a|b") << "the comment is the rest of the line";
}

}  // namespace
}  // namespace mirage::daemon
