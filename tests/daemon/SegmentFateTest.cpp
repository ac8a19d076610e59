// A segment's job that left the queue while mirage was not looking (Slurm purged its record
// MinJobAge after it ended): its fate is asked of accounting, then of its output file, and a
// segment neither can tell about is held until the user says; it never runs twice.
#include <gtest/gtest.h>

#include <fstream>

#include "TestSupport.h"
#include "mirage/daemon/slurm/OutputFile.h"
#include "mirage/daemon/slurm/SacctLookup.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::simple_request;

ControllerConfig fate_config() {
  ControllerConfig c;
  c.reconcile_delay = 5;
  c.fate_retry = 60;
  return c;
}

// Submits segment 0 and lets its job run and end while mirage is away, so that the next dump no
// longer lists it.
JobId run_unseen(Harness& h, std::int64_t id, SlurmJobState end = SlurmJobState::kCompleted) {
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.tick();  // seen pending
  if (end != SlurmJobState::kCancelled) h.slurm.start(job);
  h.slurm.finish(job, end);
  h.slurm.forget(job);
  h.clock.advance(600);
  return job;
}

// Segment 0's job, seen pending, then ended `end` after it ran and purged unseen; returns its
// record as the dump showed it, for a test to make further accounting records of.
SlurmJob end_unseen_after_running(Harness& h, std::int64_t id, SlurmJobState end) {
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.tick();  // seen pending
  SlurmJob seen = *h.slurm.find(job);
  h.slurm.start(job);
  h.slurm.finish(job, end);
  h.slurm.forget(job);
  return seen;
}

// Accounting keeps `record` too under the job's id; `later`, the next ticks ask it and take its
// answer.
void ask_accounting_keeping(Harness& h, const SlurmJob& record, Seconds later) {
  h.slurm.add_accounting_record(record);
  h.clock.advance(later);
  h.tick();  // asks accounting
  h.tick();  // its answer
}

// Segment 0 taken as run, once: segment 1 follows.
void expect_ran_once_and_went_on(Harness& h, std::int64_t id) {
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone) << h.seg(id, 0).message;
  EXPECT_FALSE(h.seg(id, 0).fate_unknown());
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u) << "the segment ran again";
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

TEST(SegmentFate, AJobThatLeftThePendingQueueUnseenIsHeldNotSubmittedAgain) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const JobId job = run_unseen(h, id);
  for (int i = 0; i < 5; ++i) {
    h.tick();
    h.clock.advance(120);
  }
  EXPECT_EQ(h.slurm.submissions().size(), 1u) << "a segment that may have run was run again";
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  EXPECT_NE(h.seg(id, 0).message.find("mirage campaign settle"), std::string::npos)
      << h.seg(id, 0).message;
  EXPECT_NE(h.seg(id, 0).message.find("no accounting"), std::string::npos);
  EXPECT_EQ(h.controller->fates_unknown(), 1u);
  // Asked again every fate_retry, not every tick.
  EXPECT_GE(h.slurm.counters().accounting_lookups, 2u);
  EXPECT_LE(h.slurm.counters().accounting_lookups, 6u);
  // Held across a restart too.
  h.restart();
  h.tick();
  h.tick();
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  (void)job;
}

TEST(SegmentFate, TheUserSaysItRanAndTheNextSegmentFollows) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id);
  h.tick();
  h.tick();
  ASSERT_TRUE(h.seg(id, 0).fate_unknown());
  h.controller->settle(id, 0, /*ran=*/true);
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u);
  EXPECT_THROW(h.controller->settle(id, 0, true), RequestError);  // nothing left to settle
}

TEST(SegmentFate, TheUserSaysItDidNotRunAndItIsSubmittedAgain) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id, SlurmJobState::kCancelled);
  h.tick();
  h.tick();
  h.controller->settle(id, 0, /*ran=*/false);
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 0u);
}

TEST(SegmentFate, AccountingSaysItRanSoTheNextSegmentFollows) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id);
  h.tick();  // asks accounting
  h.tick();  // its answer: COMPLETED
  expect_ran_once_and_went_on(h, id);
}

// Ids repeat: accounting also keeps a later job given the same id (another name, submitted
// after), the only record `sacct -j` prints without -D. The segment's own record decides.
TEST(SegmentFate, AccountingsRecordOfAnotherJobUnderTheSameIdIsPassedOver) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  SlurmJob other = end_unseen_after_running(h, id, SlurmJobState::kCompleted);
  other.name = "eval";
  other.comment.clear();
  other.submit = h.clock.now() + 300;
  other.start = h.clock.now() + 400;
  other.state = SlurmJobState::kRunning;
  ask_accounting_keeping(h, other, 600);
  expect_ran_once_and_went_on(h, id);  // by the segment's record, COMPLETED
}

// A job requeued (a node failed) and run again has a record for each run, the last submitted at
// its requeue, long after the segment: that last run's end is the segment's fate.
TEST(SegmentFate, ARequeuedJobsLastRunInAccountingIsItsFate) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  SlurmJob rerun = end_unseen_after_running(h, id, SlurmJobState::kNodeFail);
  rerun.submit = h.clock.now() + 2 * kHour;  // requeued
  rerun.start = rerun.submit + 60;
  rerun.end = rerun.start + 600;
  rerun.state = SlurmJobState::kCompleted;
  ask_accounting_keeping(h, rerun, 3 * kHour);
  expect_ran_once_and_went_on(h, id);
  EXPECT_EQ(h.seg(id, 0).seg.end_time, rerun.end);
}

// Accounting's record says how the job ended, not its shape: the campaign keeps the shape Slurm
// granted (4 GPUs a node here), not sacct's defaults.
TEST(SegmentFate, AnAccountedEndKeepsTheGrantedShape) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id);
  h.tick();
  h.tick();
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.campaign(id).spec.gpus_per_node, 4);
  EXPECT_EQ(h.campaign(id).spec.time_limit, kHour);
  ASSERT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1)[0].request.gpus_per_node, 4);
}

// While the store could not be written the controller is read again from it: a submission still
// queued on the Slurm thread is not settled by its absence from a dump taken before it ran.
TEST(SegmentFate, ReadingTheStoreAgainKeepsWhatIsOutOnTheSlurmThread) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  const Actions first = h.tick(/*perform=*/false);
  ASSERT_EQ(first.submits.size(), 1u);
  h.controller->load();
  h.clock.advance(30);
  const Actions again = h.tick(/*perform=*/false);
  EXPECT_TRUE(again.submits.empty()) << "the queued submission was made a second time";
  perform_actions(*h.controller, h.slurm, first);
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u);
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kPending);
}

// A file every segment writes (`#SBATCH -o train.log`) is written by the predecessor while its
// successor waits: it cannot say that the successor started.
TEST(SegmentFate, AnOutputFileSharedBySegmentsSaysNothing) {
  Harness h(fate_config());
  auto r = simple_request(2);
  const std::string log = h.dir.file("train.log");
  r.script = "#!/bin/bash\n#SBATCH --output=" + log + "\nsleep 20\n";
  const auto id = h.controller->add(r).spec.id;
  h.tick();
  EXPECT_EQ(h.seg(id, 0).output_file, "") << "a shared file was taken as the job's own";
  const JobId job = h.job_of(id, 0);
  h.tick();
  h.slurm.finish(job, SlurmJobState::kCancelled);
  h.slurm.forget(job);
  std::ofstream(log) << "the predecessor's lines\n";
  h.clock.advance(600);
  h.tick();
  h.tick();
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
}

TEST(OutputFile, OnlyAFileNamedAfterTheJobIsTheJobsAlone) {
  EXPECT_TRUE(names_one_job("slurm-%j.out", false));
  EXPECT_TRUE(names_one_job("/s/%x-%8j.log", false));
  EXPECT_TRUE(names_one_job("run-%A.out", false));
  EXPECT_FALSE(names_one_job("run-%A.out", true));
  EXPECT_FALSE(names_one_job("train.log", false));
  EXPECT_FALSE(names_one_job("%x.out", false));
  EXPECT_FALSE(names_one_job("100%%j.out", false)) << "a literal percent sign and a j";
}

TEST(SegmentFate, AccountingSaysItNeverStartedSoItIsSubmittedAgain) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id, SlurmJobState::kCancelled);
  h.tick();
  h.tick();
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u);
  EXPECT_EQ(h.seg(id, 0).seg.attempts, 2);
}

TEST(SegmentFate, AccountingThatRanButFailedRunsTheSegmentAgain) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id, SlurmJobState::kFailed);
  h.tick();
  h.tick();
  // It started and failed with no successor out: a retry, as when the failure is seen.
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 2u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 0u);
}

TEST(SegmentFate, AccountingNotAnsweringHoldsAndAsksAgainLater) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  h.slurm.set_accounting_reachable(false);
  const auto id = h.controller->add(simple_request(2)).spec.id;
  run_unseen(h, id);
  h.tick();
  h.tick();
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  EXPECT_NE(h.seg(id, 0).message.find("accounting did not answer"), std::string::npos);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
  h.slurm.set_accounting_reachable(true);
  h.tick();  // not asked again before fate_retry
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  h.clock.advance(61);
  h.tick();
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

TEST(SegmentFate, TheOutputFileShowsItStartedWithoutAccounting) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId job = h.job_of(id, 0);
  const std::string out = h.dir.file("slurm-" + std::to_string(job) + ".out");
  h.slurm.set_std_out(job, out);
  h.tick();  // seen pending, with its output file named
  EXPECT_EQ(h.seg(id, 0).output_file, out);
  h.slurm.start(job);
  h.slurm.finish(job);
  h.slurm.forget(job);
  std::ofstream(out) << "step 1\n";
  h.clock.advance(600);
  h.tick();
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_NE(h.seg(id, 0).message.find("output file"), std::string::npos);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 0).size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

TEST(SegmentFate, NoOutputFileLeavesTheFateUnknown) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.slurm.set_std_out(job, h.dir.file("never-written.out"));
  h.tick();
  h.slurm.finish(job, SlurmJobState::kCancelled);
  h.slurm.forget(job);
  h.clock.advance(600);
  h.tick();
  h.tick();
  EXPECT_TRUE(h.seg(id, 0).fate_unknown());
  EXPECT_NE(h.seg(id, 0).message.find("does not exist"), std::string::npos);
  EXPECT_EQ(h.slurm.submissions().size(), 1u);
}

TEST(SegmentFate, ASegmentSeenRunningThatLeftIsTakenAsEnded) {
  Harness h(fate_config());
  const auto id = h.controller->add(simple_request(2)).spec.id;
  h.tick();
  const JobId job = h.job_of(id, 0);
  h.slurm.start(job);
  h.tick();
  ASSERT_EQ(h.seg(id, 0).seg.state, SegmentState::kRunning);
  h.slurm.finish(job);
  h.slurm.forget(job);
  h.clock.advance(600);
  h.tick();
  h.tick();
  EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
  EXPECT_FALSE(h.seg(id, 0).fate_unknown());
}

TEST(OutputFile, IsNamedAsSlurmdNamesIt) {
  OutputNames n;
  n.job = 712;
  n.name = "gpt-s1";
  n.user = "ann";
  n.work_dir = "/home/ann/run";
  EXPECT_EQ(expand_output_pattern("slurm-%j.out", n), "/home/ann/run/slurm-712.out");
  EXPECT_EQ(expand_output_pattern("/scratch/%u/%x-%8j.log", n), "/scratch/ann/gpt-s1-00000712.log");
  EXPECT_EQ(expand_output_pattern("logs/%A_%%.txt", n), "/home/ann/run/logs/712_%.txt");
  EXPECT_EQ(expand_output_pattern("out-%N.txt", n), "") << "the node is known only as it runs";
  EXPECT_EQ(expand_output_pattern("/dev/null", n), "");
}

TEST(OutputFile, TheScriptsDirectiveAndTheOptionsThatOverrideItAreRead) {
  const std::string script = "#!/bin/bash\n#SBATCH --output=logs/seg-%j.txt\n#SBATCH -D sub\nrun\n";
  OutputPlace p = output_place(script, {}, "/home/ann");
  EXPECT_EQ(p.pattern, "logs/seg-%j.txt");
  EXPECT_EQ(p.work_dir, "/home/ann/sub");
  p = output_place(script, {"--output=/tmp/o-%j", "--chdir=/work"}, "/home/ann");
  EXPECT_EQ(p.pattern, "/tmp/o-%j");
  EXPECT_EQ(p.work_dir, "/work");
  p = output_place("#!/bin/bash\nrun\n", {}, "/home/ann");
  EXPECT_EQ(p.pattern, "slurm-%j.out");
  EXPECT_EQ(p.work_dir, "/home/ann");
}

// Two campaigns' jobs gone unseen in one tick: one question to accounting for both.
TEST(SegmentFate, OneAccountingQuestionATickForEveryJobGoneUnseen) {
  Harness h(fate_config());
  h.slurm.set_accounting(true);
  const auto a = h.controller->add(simple_request(2)).spec.id;
  const auto b = h.controller->add(simple_request(2, kHour, "b")).spec.id;
  h.tick();
  h.tick();  // seen pending
  for (const auto id : {a, b}) {
    h.slurm.start(h.job_of(id, 0));
    h.slurm.finish(h.job_of(id, 0));
    h.slurm.forget(h.job_of(id, 0));
  }
  h.clock.advance(600);
  h.tick();
  EXPECT_EQ(h.slurm.counters().accounting_lookups, 1u);
  h.tick();
  for (const auto id : {a, b}) {
    EXPECT_EQ(h.seg(id, 0).seg.state, SegmentState::kDone);
    EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
  }
}

// The site's sacct asked once for several jobs: each gets its record, or why there is none.
TEST(SacctLookup, AsksOnceForEveryJob) {
  testing::TempDir dir;
  const std::string args = dir.file("args");
  SacctSettings settings;
  settings.program =
      testing::fake_program(dir, "sacct",
                            "echo \"$@\" > " + args +
                                "\necho '712|0|COMPLETED|1700000000|1700000005|1700000015|0:0'\n"
                                "echo '713|0|FAILED|1700000100|1700000105|1700000115|1:0'\n");
  const auto answers = lookup_accounted_jobs(settings, {712, 713, 714});
  ASSERT_EQ(answers.size(), 3u);
  ASSERT_EQ(answers.at(712).records.size(), 1u);
  EXPECT_EQ(answers.at(712).records[0].state, SlurmJobState::kCompleted);
  ASSERT_EQ(answers.at(713).records.size(), 1u);
  EXPECT_EQ(answers.at(713).records[0].state, SlurmJobState::kFailed);
  EXPECT_TRUE(answers.at(714).records.empty());
  EXPECT_NE(answers.at(714).why.find("no record of job 714"), std::string::npos);
  std::ifstream in(args);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("-D -j 712,713,714"), std::string::npos) << line;
}

// Without -D sacct prints only the newest job of an id: asked with it, every record of the id
// comes back (a reused id, a requeued job's runs), with its name and comment to tell them apart.
TEST(SacctLookup, ReadsEveryRecordOfAnId) {
  testing::TempDir dir;
  SacctSettings settings;
  settings.program = testing::fake_program(
      dir, "sacct",
      "echo '712|0|NODE_FAIL|1700000000|1700000005|1700000015|0:0|train-s0|mirage:ab:1:0:1'\n"
      "echo '712|0|COMPLETED|1700007200|1700007205|1700007215|0:0|train-s0|mirage:ab:1:0:1'\n"
      "echo '712|0|RUNNING|1800000000|1800000005|Unknown|0:0|eval|'\n");
  const auto answers = lookup_accounted_jobs(settings, {712});
  const auto& records = answers.at(712).records;
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].state, SlurmJobState::kNodeFail);
  EXPECT_EQ(records[1].state, SlurmJobState::kCompleted);
  EXPECT_EQ(records[1].comment, "mirage:ab:1:0:1");
  EXPECT_EQ(records[2].name, "eval");
}

TEST(SacctLine, ReadsARecordWithEpochTimes) {
  std::string why;
  const auto job =
      parse_sacct_line("712|1000|COMPLETED|1700000000|1700000005|1700000015|0:0", &why);
  ASSERT_TRUE(job) << why;
  EXPECT_EQ(job->id, 712);
  EXPECT_EQ(job->user_id, 1000u);
  EXPECT_EQ(job->state, SlurmJobState::kCompleted);
  EXPECT_EQ(job->start, 1700000005);
  EXPECT_EQ(job->end, 1700000015);
  const auto cancelled =
      parse_sacct_line("713|1000|CANCELLED by 1000|1700000000|1700000100|1700000100|0:0", &why);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->state, SlurmJobState::kCancelled);
  EXPECT_EQ(cancelled->start, kUnknownTime) << "cancelled while pending: it never started";
  const auto failed = parse_sacct_line("714|0|FAILED|1700000000|1700000001|1700000002|3:0", &why);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->exit_code, 3);
  EXPECT_FALSE(parse_sacct_line("garbage", &why));
  EXPECT_NE(why.find("expected 7 fields"), std::string::npos);
  EXPECT_FALSE(parse_sacct_line("715|0|WEIRD|1|2|3|0:0", &why));
}

}  // namespace
}  // namespace mirage::daemon
