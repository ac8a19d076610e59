// Submitting through sbatch, against a fake `sbatch` (a shell script in a temporary directory)
// that records what it was given and answers as the test tells it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "TestSupport.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"

namespace mirage::daemon {
namespace {

using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fake sbatch: records its arguments, environment, working directory and standard input
// beside itself, then runs `body`.
std::string fake_sbatch(const TempDir& dir, const std::string& body) {
  const std::string path = dir.file("sbatch");
  std::ofstream f(path);
  f << "#!/bin/sh\n"
    << "d='" << dir.path().string() << "'\n"
    << "printf '%s\\n' \"$@\" > \"$d/args\"\n"
    << "export -p > \"$d/env\"\n"
    << "pwd > \"$d/cwd\"\n"
    << "while IFS= read -r line; do printf '%s\\n' \"$line\"; done > \"$d/stdin\"\n"
    << body << "\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

SubmitRequest request(const TempDir& dir) {
  SubmitRequest r;
  r.script = "#!/bin/bash\n#SBATCH --ntasks-per-node=2\nsrun train\n";
  r.environment = {"PATH=/usr/bin:/bin", "MIRAGE_SEGMENT=3", "SLURM_CONF=/elsewhere.conf"};
  r.work_dir = dir.path().string();
  r.options = {"--nodes=2", "--time=01:00:00"};
  r.name = "gpt-s3";
  r.comment = "mirage:0000abcd:7:3:1";
  return r;
}

SbatchSubmitter submitter(const std::string& program, Seconds timeout = 30) {
  return SbatchSubmitter({program, "/etc/slurm/test.conf", timeout});
}

SlurmError error_of(const SbatchSubmitter& s, const SubmitRequest& r) {
  try {
    s.submit(r);
  } catch (const SlurmError& e) {
    return e;
  }
  ADD_FAILURE() << "submit did not throw";
  return SlurmError("", 0, false);
}

TEST(SbatchSubmitter, ReturnsTheJobIdAndGivesSbatchTheScriptOptionsTagAndEnvironment) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 4242"));
  const SubmitRequest r = request(dir);
  EXPECT_EQ(s.submit(r), 4242);
  EXPECT_EQ(slurp(dir.file("args")),
            "--parsable\n--ignore-pbs\n--job-name=gpt-s3\n--comment=mirage:0000abcd:7:3:1\n"
            "--export=ALL\n"
            "--nodes=2\n--time=01:00:00\n");
  EXPECT_EQ(slurp(dir.file("stdin")), r.script);
  EXPECT_EQ(slurp(dir.file("cwd")), dir.path().string() + "\n");
  const std::string env = slurp(dir.file("env"));
  EXPECT_NE(env.find("MIRAGE_SEGMENT='3'"), std::string::npos) << env;
  // The cluster the daemon watches, not the one of the shell that added the campaign.
  EXPECT_NE(env.find("SLURM_CONF='/etc/slurm/test.conf'"), std::string::npos) << env;
  EXPECT_EQ(env.find("/elsewhere.conf"), std::string::npos) << env;
}

// sbatch's input variables override the script's #SBATCH lines: a shell's SBATCH_TIMELIMIT or
// SBATCH_CLUSTERS would make a job other than the shape the daemon recorded and plans with.
TEST(SbatchSubmitter, SbatchRunsWithoutTheInputVariablesThatOverrideTheScript) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 4242"));
  SubmitRequest r = request(dir);
  for (const char* e : {"SBATCH_TIMELIMIT=5", "SBATCH_PARTITION=debug", "SBATCH_CLUSTERS=other",
                        "SLURM_CLUSTERS=other", "SBATCH_GRES=gpu:1", "MY_SBATCH_NOTE=kept"})
    r.environment.push_back(e);
  EXPECT_EQ(s.submit(r), 4242);
  const std::string env = slurp(dir.file("env"));
  for (const char* name :
       {"SBATCH_TIMELIMIT", "SBATCH_PARTITION", "SBATCH_CLUSTERS", "SLURM_CLUSTERS", "SBATCH_GRES"})
    EXPECT_EQ(env.find(std::string(" ") + name + "="), std::string::npos) << name << "\n" << env;
  EXPECT_NE(env.find("MY_SBATCH_NOTE='kept'"), std::string::npos) << env;
  EXPECT_NE(env.find("MIRAGE_SEGMENT='3'"), std::string::npos) << env;
}

// sbatch gives the job its caller's umask as SLURM_UMASK where the environment sets none: the
// daemon's 0077 unless `campaign add` recorded the user's, which sbatch then passes on as given.
TEST(SbatchSubmitter, TheUmaskCampaignAddRecordedReachesSbatchAsSbatchWritesIt) {
  EXPECT_EQ(slurm_umask_entry(022), "SLURM_UMASK=0022");
  EXPECT_EQ(slurm_umask_entry(027), "SLURM_UMASK=0027");
  EXPECT_EQ(slurm_umask_entry(0), "SLURM_UMASK=0000");
  EXPECT_EQ(slurm_umask_entry(0777), "SLURM_UMASK=0777");
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 4242"));
  SubmitRequest r = request(dir);
  r.environment.push_back(slurm_umask_entry(022));
  EXPECT_EQ(s.submit(r), 4242);
  const std::string env = slurp(dir.file("env"));
  EXPECT_NE(env.find("SLURM_UMASK='0022'"), std::string::npos) << env;
}

// SLURM_HINT is refused at `campaign add`; a campaign stored before keeps it on every segment,
// so that its CPU layout does not change halfway.
TEST(SbatchSubmitter, ACampaignStoredWithSlurmHintKeepsItOnEverySegment) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 4242"));
  SubmitRequest r = request(dir);
  r.environment.push_back("SLURM_HINT=nomultithread");
  EXPECT_EQ(s.submit(r), 4242);
  const std::string env = slurp(dir.file("env"));
  EXPECT_NE(env.find("SLURM_HINT='nomultithread'"), std::string::npos) << env;
}

// sbatch translates a script's #PBS and #BSUB lines into its own options (src/sbatch/xlate.c):
// a ported script's "#PBS -t 0-3" would run the segment four times at once on one checkpoint,
// "#PBS -h" hold it, "#PBS -W depend=" chain it behind a job of its own.
TEST(SbatchSubmitter, SbatchReadsNoPbsOrBsubLines) {
  SubmitRequest r;
  r.comment = "mirage:00000001:1:1:1";
  r.script = "#!/bin/bash\n#PBS -t 0-3\n#BSUB -W 60\nsrun train\n";
  const auto args = SbatchSubmitter::arguments(r);
  EXPECT_NE(std::find(args.begin(), args.end(), "--ignore-pbs"), args.end());
  // A campaign added before keeps what sbatch made of them (its limit or account may be there).
  r.ignore_pbs = false;
  const auto kept = SbatchSubmitter::arguments(r);
  EXPECT_EQ(std::find(kept.begin(), kept.end(), "--ignore-pbs"), kept.end());
}

TEST(SbatchSubmitter, AHeldSuccessorGoesBehindItsPredecessorOverTheUsersOwnDependency) {
  SubmitRequest r;
  r.comment = "mirage:00000001:1:1:1";
  r.options = {"--dependency=singleton"};
  r.after_any = 812;
  const auto args = SbatchSubmitter::arguments(r);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args.back(), "--dependency=afterany:812");  // last: sbatch takes the last one
  r.after_any = 0;
  for (const auto& a : SbatchSubmitter::arguments(r))
    EXPECT_EQ(a.find("afterany"), std::string::npos);
}

// sbatch's --export argument for a segment of `script` submitted with `environment`.
std::string export_argument(const std::string& script,
                            const std::vector<std::string>& environment) {
  SubmitRequest r;
  r.comment = "mirage:00000001:1:1:1";
  r.script = script;
  r.environment = environment;
  for (const auto& a : SbatchSubmitter::arguments(r))
    if (a.rfind("--export", 0) == 0) return a;
  return "(none)";
}

// The command line's --export replaces the script's: it says the script's, with the segment's
// MIRAGE_* variables beside it (by name: sbatch takes their values from its environment).
TEST(SbatchSubmitter, TheJobGetsTheEnvironmentTheScriptsExportLineAsksForWithMirages) {
  const std::vector<std::string> env = {"HOME=/home/u", "MIRAGE_SEGMENT=3",
                                        "MIRAGE_DONE_FILE=/s/done"};
  auto export_of = [&](const std::string& script) { return export_argument(script, env); };
  EXPECT_EQ(export_of("#!/bin/bash\nsrun a\n"), "--export=ALL");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=NONE\nsrun a\n"),
            "--export=MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export none\nsrun a\n"),
            "--export=MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH -N 1 --export=PATH,OMP_NUM_THREADS=8\nsrun a\n"),
            "--export=PATH,OMP_NUM_THREADS=8,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=ALL,EDITOR=vi\nsrun a\n"),
            "--export=ALL,EDITOR=vi,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
}

// sbatch applies the list in order: a shell's MIRAGE_CKPT_DIR named again after the script's
// MIRAGE_CKPT_DIR=/ckpt/B would put campaign B in campaign A's checkpoints. The daemon's own
// names still come last, over the script's.
TEST(SbatchSubmitter, AUsersOwnMirageValueInTheScriptsExportListIsNotReplacedByTheShells) {
  const std::vector<std::string> env = {"MIRAGE_CKPT_DIR=/ckpt/A", "MIRAGE_SEGMENT=3",
                                        "MIRAGE_DONE_FILE=/s/done"};
  auto export_of = [&](const std::string& script) { return export_argument(script, env); };
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=ALL,MIRAGE_CKPT_DIR=/ckpt/B\nsrun a\n"),
            "--export=ALL,MIRAGE_CKPT_DIR=/ckpt/B,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=HOME,MIRAGE_CKPT_DIR\nsrun a\n"),
            "--export=HOME,MIRAGE_CKPT_DIR,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=ALL,MIRAGE_SEGMENT=9\nsrun a\n"),
            "--export=ALL,MIRAGE_SEGMENT=9,MIRAGE_CKPT_DIR,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
  EXPECT_EQ(export_of("#!/bin/bash\n#SBATCH --export=ALL\nsrun a\n"),
            "--export=ALL,MIRAGE_CKPT_DIR,MIRAGE_SEGMENT,MIRAGE_DONE_FILE");
}

TEST(SbatchSubmitter, ReadsAFederatedIdAfterWarnings) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 'sbatch: warning: odd' >&2; echo '77;cluster'"));
  EXPECT_EQ(s.submit(request(dir)), 77);
}

TEST(SbatchSubmitter, ARefusalCarriesSbatchsOwnMessage) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(
      dir,
      "echo 'sbatch: error: Batch job submission failed: Invalid account or account/partition "
      "combination specified' >&2; exit 1"));
  const SlurmError e = error_of(s, request(dir));
  EXPECT_FALSE(e.transient());
  EXPECT_STREQ(e.what(),
               "sbatch: error: Batch job submission failed: Invalid account or account/partition "
               "combination specified");
}

// As sbatch of 22.05 and 24.11 prints them: the submit limit's reason on the line before the
// accounting policy's message, or the last line after sbatch's own tries.
TEST(SbatchSubmitter, ARefusalThatLastsOnlyAWhileIsToldFromARealOne) {
  const std::string failed = "echo 'sbatch: error: Batch job submission failed: ";
  for (const auto& [body, for_now] : std::vector<std::pair<std::string, bool>>{
           {"echo 'sbatch: error: QOSMaxSubmitJobPerUserLimit' >&2; " + failed +
                "Job violates accounting/QOS policy (job submit limit, user'\\''s size and/or "
                "time limits)' >&2",
            true},
           {"echo 'sbatch: error: AssocMaxSubmitJobLimit' >&2; " + failed +
                "Job violates accounting/QOS policy (job submit limit, user'\\''s size and/or "
                "time limits)' >&2",
            true},
           {"echo 'sbatch: error: Slurm temporarily unable to accept job, sleeping and "
            "retrying' >&2; " +
                failed + "Resource temporarily unavailable' >&2",
            true},
           {"echo 'sbatch: error: Slurm job queue full, sleeping and retrying' >&2; " + failed +
                "Unable to create job record, try again' >&2",
            true},
           {failed + "System submissions disabled' >&2", true},
           // ESLURM_PARTITION_NOT_AVAIL: an administrator drains (or deactivates) the partition.
           {failed + "Required partition not available (inactive or drain)' >&2", true},
           // A size or time limit: waiting does not lift it.
           {"echo 'sbatch: error: QOSMaxWallDurationPerJobLimit' >&2; " + failed +
                "Job violates accounting/QOS policy (job submit limit, user'\\''s size and/or "
                "time limits)' >&2",
            false},
           {failed + "Invalid qos specification' >&2", false},
           // The same words in a warning before a refusal that lasts: the refusal's line tells.
           {"echo 'sbatch: warning: Resource temporarily unavailable, retrying' >&2; " + failed +
                "Invalid account or account/partition combination specified' >&2",
            false},
       }) {
    TempDir dir;
    const SlurmError e = error_of(submitter(fake_sbatch(dir, body + "; exit 1")), request(dir));
    EXPECT_EQ(e.refused_for_now(), for_now) << e.what();
    EXPECT_FALSE(e.transient()) << e.what();
  }
}

TEST(SbatchSubmitter, AControllerThatDoesNotAnswerLeavesTheOutcomeToTheTag) {
  TempDir dir;
  const auto s = submitter(
      fake_sbatch(dir,
                  "echo 'sbatch: error: Batch job submission failed: Socket timed out on send/recv "
                  "operation' >&2; exit 1"));
  EXPECT_TRUE(error_of(s, request(dir)).transient());
}

// slurm_errno.c's texts of SLURM_COMMUNICATIONS_SEND_ERROR, _RECEIVE_ERROR and
// SLURM_PROTOCOL_INSANE_MSG_LENGTH (1000-1899, transient by slurm_error_is_transient).
TEST(SbatchSubmitter, AMessageLostOnTheWayLeavesTheOutcomeToTheTag) {
  for (const char* message :
       {"Message receive failure", "Message send failure", "Insane message length"}) {
    TempDir dir;
    const auto s = submitter(
        fake_sbatch(dir, std::string("echo 'sbatch: error: Batch job submission failed: ") +
                             message + "' >&2; exit 1"));
    const SlurmError e = error_of(s, request(dir));
    EXPECT_TRUE(e.transient()) << e.what();
    EXPECT_FALSE(e.refused_for_now()) << e.what();
  }
}

TEST(SbatchSubmitter, NoJobIdInTheOutputLeavesTheOutcomeToTheTag) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "echo 'Submitted batch job'"));
  const SlurmError e = error_of(s, request(dir));
  EXPECT_TRUE(e.transient());
  EXPECT_NE(std::string(e.what()).find("printed no job id"), std::string::npos) << e.what();
}

TEST(SbatchSubmitter, ASbatchThatHangsIsKilledAtTheTimeoutAndTheOutcomeIsUnknown) {
  TempDir dir;
  const auto s = submitter(fake_sbatch(dir, "sleep 30; echo 1"), 1);
  const auto t0 = std::chrono::steady_clock::now();
  const SlurmError e = error_of(s, request(dir));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(e.transient());
  EXPECT_NE(std::string(e.what()).find("did not finish within 1s"), std::string::npos) << e.what();
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(SbatchSubmitter, ASbatchThatCannotBeRunIsARefusalSayingWhy) {
  TempDir dir;
  const SlurmError e = error_of(submitter(dir.file("no-sbatch")), request(dir));
  EXPECT_FALSE(e.transient());
  EXPECT_FALSE(e.refused_for_now());
  EXPECT_EQ(std::string(e.what()),
            "cannot run sbatch (" + dir.file("no-sbatch") + "): No such file or directory");
}

// sbatch being replaced (a package update writing it) makes exec fail with ETXTBSY, as do a
// full process or file table (fork's EAGAIN, EMFILE) and an NFS working directory that times
// out: nothing was submitted, and the same request runs once that passes.
TEST(SbatchSubmitter, AStartThatFailsOnlyForAWhileIsARefusalForNow) {
  TempDir dir;
  const std::string program = fake_sbatch(dir, "echo 1");
  std::ofstream being_written(program, std::ios::app);  // exec: "Text file busy"
  ASSERT_TRUE(being_written.is_open());
  const SlurmError e = error_of(submitter(program), request(dir));
  EXPECT_FALSE(e.transient()) << e.what();
  EXPECT_TRUE(e.refused_for_now()) << e.what();
  EXPECT_EQ(std::string(e.what()), "cannot run sbatch (" + program + "): Text file busy");
}

TEST(SbatchSubmitter, AWorkingDirectoryThatIsGoneIsARefusalSayingWhich) {
  TempDir dir;
  SubmitRequest r = request(dir);
  r.work_dir = dir.file("gone");
  const SlurmError e = error_of(submitter(fake_sbatch(dir, "echo 1")), r);
  EXPECT_FALSE(e.transient());
  EXPECT_FALSE(e.refused_for_now());
  EXPECT_EQ(std::string(e.what()),
            "cannot submit from " + dir.file("gone") + ": No such file or directory");
}

TEST(SbatchSubmitter, AnExitWithoutAMessageSaysTheStatus) {
  TempDir dir;
  const SlurmError e = error_of(submitter(fake_sbatch(dir, "exit 3")), request(dir));
  EXPECT_FALSE(e.transient());
  EXPECT_NE(std::string(e.what()).find("exited with status 3"), std::string::npos) << e.what();
}

TEST(FindSbatch, TheConfiguredOneOrTheFirstOnThePath) {
  TempDir dir;
  const std::string fake = fake_sbatch(dir, "echo 1");
  EXPECT_EQ(find_sbatch(fake, ""), fake);
  EXPECT_EQ(find_sbatch("", "/nonexistent:" + dir.path().string() + ":/bin"), fake);
  try {
    find_sbatch("", "/nonexistent");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no sbatch on $PATH (/nonexistent)"), std::string::npos);
  }
  try {
    find_sbatch(dir.file("args-missing"), "");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos);
  }
  std::ofstream(dir.file("plain")) << "not executable";
  ::chmod(dir.file("plain").c_str(), 0644);
  EXPECT_THROW(find_sbatch(dir.file("plain"), ""), std::runtime_error);
}

}  // namespace
}  // namespace mirage::daemon
