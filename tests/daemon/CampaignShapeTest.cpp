// A campaign's segments take their shape from the script's #SBATCH lines, the `campaign add`
// flags override them (as sbatch options), and once Slurm has the first job, its record is the
// shape the decisions use.
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"

namespace mirage::daemon {
namespace {

using testing::Harness;
using testing::refusal_of;

const char* kScript =
    "#!/bin/bash\n"
    "#SBATCH --nodes=2\n"
    "#SBATCH --gpus-per-node=4\n"
    "#SBATCH --time=48:00:00\n"
    "#SBATCH --ntasks-per-node=2\n"
    "srun train\n";

CampaignRequest script_request(const std::string& script = kScript) {
  CampaignRequest r;
  r.name = "gpt";
  r.script = script;
  r.script_path = "/home/u/gpt.sbatch";
  r.segments = 2;
  r.work_dir = "/tmp";
  return r;
}

ControllerConfig config() {
  ControllerConfig c;
  // The submissions the policy makes; the fallback chain has its own tests (FallbackChainTest).
  c.fallback_chain = false;
  c.fallback_lead = 0;
  return c;
}

TEST(CampaignShape, TheScriptGivesTheShapeWithoutFlagsAndSbatchGetsNoShapeOptions) {
  Harness h(config());
  const auto& rec = h.controller->add(script_request());
  EXPECT_EQ(rec.spec.nodes, 2);
  EXPECT_EQ(rec.spec.gpus_per_node, 4);
  EXPECT_EQ(rec.spec.time_limit, 48 * kHour);
  EXPECT_FALSE(rec.shape_granted);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  const SubmitRequest& q = h.slurm.submissions()[0].request;
  EXPECT_TRUE(q.options.empty());
  EXPECT_EQ(q.script, kScript);
  EXPECT_EQ(q.nodes, 2);
  EXPECT_EQ(q.time_limit, 48 * kHour);
}

TEST(CampaignShape, FlagsOverrideTheScriptAsSbatchOptionsAndSayWhichWins) {
  Harness h(config());
  auto r = script_request();
  r.shape.nodes = 4;
  r.shape.account = "proj";
  std::vector<std::string> notes;
  const auto id = h.controller->add(r, &notes).spec.id;
  ASSERT_EQ(notes.size(), 2u);  // the shape's, then which policy (none given) and why
  EXPECT_EQ(notes[0],
            "--nodes 4 overrides '#SBATCH --nodes=2' (/home/u/gpt.sbatch:2): the flag wins");
  EXPECT_EQ(notes[1].rfind("policy ", 0), 0u) << notes[1];
  EXPECT_EQ(h.campaign(id).spec.nodes, 4);
  h.tick();
  EXPECT_EQ(h.slurm.submissions()[0].request.options,
            (std::vector<std::string>{"--nodes=4", "--account=proj"}));
}

// sbatch would apply a ported script's #PBS and #BSUB lines (an array, a hold, a dependency, a
// walltime) anywhere before the 101st line that is no comment, where mirage reads only #SBATCH:
// it submits with --ignore-pbs, and the user hears which lines that leaves out.
TEST(CampaignShape, AnAddNamesThePbsAndBsubLinesSbatchIsToldToIgnore) {
  Harness h(config());
  std::string script =
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "#PBS -t 0-3\n"
      "#BSUB -W 60\n"
      "  #PBS -h\n"  // not at the line's start: sbatch reads it as a comment
      "srun prepare\n"
      "#PBS -l walltime=48:00:00\n";  // after a command, still read by sbatch
  for (int i = 0; i < 100; ++i) script += "echo " + std::to_string(i) + "\n";
  script += "#PBS -W depend=afterok:12\n";  // past the 100 lines sbatch reads for them
  std::vector<std::string> notes;
  h.controller->add(script_request(script), &notes);
  ASSERT_EQ(notes.size(), 4u);  // one a line, then which policy (none given) and why
  EXPECT_EQ(notes[0],
            "'#PBS -t 0-3' (/home/u/gpt.sbatch:3) is ignored: mirage submits with --ignore-pbs; "
            "say what the segments need in #SBATCH lines");
  EXPECT_EQ(notes[1],
            "'#BSUB -W 60' (/home/u/gpt.sbatch:4) is ignored: mirage submits with --ignore-pbs; "
            "say what the segments need in #SBATCH lines");
  EXPECT_EQ(notes[2],
            "'#PBS -l walltime=48:00:00' (/home/u/gpt.sbatch:7) is ignored: mirage submits with "
            "--ignore-pbs; say what the segments need in #SBATCH lines");
  EXPECT_EQ(notes[3].rfind("policy ", 0), 0u) << notes[3];
}

// A whole PBS header is not a screenful of notes: the first five, then how many more.
TEST(CampaignShape, AnAddNamesTheFirstFivePbsLinesAndCountsTheRest) {
  Harness h(config());
  std::string script = "#!/bin/bash\n";
  for (int i = 0; i < 8; ++i) script += "#PBS -N n" + std::to_string(i) + "\n";
  script += "srun train\n";
  std::vector<std::string> notes;
  h.controller->add(script_request(script), &notes);
  ASSERT_EQ(notes.size(), 7u);
  EXPECT_EQ(notes[4],
            "'#PBS -N n4' (/home/u/gpt.sbatch:6) is ignored: mirage submits with --ignore-pbs; "
            "say what the segments need in #SBATCH lines");
  EXPECT_EQ(notes[5],
            "3 more #PBS or #BSUB lines (/home/u/gpt.sbatch:7 and after) are ignored too");
}

// sbatch --export=NONE still gives the job its SLURM_* variables, the umask among them: an add
// with --no-export-env keeps the umask `campaign add` recorded, and nothing else of its shell.
TEST(CampaignShape, AnAddWithoutItsShellsEnvironmentKeepsItsUmask) {
  Harness h(config());
  auto r = script_request();
  r.export_environment = false;
  r.environment = {"HOME=/home/u", "SLURM_UMASK=0022"};
  const auto id = h.controller->add(r).spec.id;
  EXPECT_EQ(h.campaign(id).environment, std::vector<std::string>{"SLURM_UMASK=0022"});
}

// sbatch runs without them (SbatchSubmitter): the user hears which, to move them to the script.
TEST(CampaignShape, AnAddWhoseShellSetsSbatchVariablesIsRefusedNamingThem) {
  Harness h(config());
  auto r = script_request();
  r.environment = {"HOME=/home/u", "SBATCH_TIMELIMIT=5", "SBATCH_ACCOUNT=proj",
                   "SLURM_CLUSTERS=other"};
  try {
    h.controller->add(r);
    ADD_FAILURE() << "added";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "environment: SBATCH_TIMELIMIT, SBATCH_ACCOUNT, SLURM_CLUSTERS set; sbatch "
                  "reads them over the script's #SBATCH lines"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(h.controller->campaigns().empty());
  r.environment = {"HOME=/home/u"};
  std::vector<std::string> notes;
  h.controller->add(r, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("policy ", 0), 0u) << notes[0];
}

// SLURM_HINT is sbatch's --hint as SBATCH_HINT is (sbatch.1, INPUT ENVIRONMENT VARIABLES): a
// shell's "nomultithread" would change the job's CPUs behind the script's back.
TEST(CampaignShape, AnAddWhoseShellSetsSlurmHintIsRefusedNamingIt) {
  Harness h(config());
  auto r = script_request();
  r.environment = {"HOME=/home/u", "SLURM_HINT=nomultithread"};
  const std::string e = refusal_of(*h.controller, r);
  EXPECT_NE(e.find("environment: SLURM_HINT set; sbatch reads them over"), std::string::npos) << e;
  EXPECT_TRUE(h.controller->campaigns().empty());
}

// Added from inside a job (a segment adding the next campaign): the outer job's SLURM_* would
// reach each segment, and srun there would read SLURM_NTASKS or SLURM_MEM_PER_NODE as its own.
TEST(CampaignShape, AnAddFromInsideAJobLeavesOutThatJobsSlurmVariablesSayingWhich) {
  Harness h(config());
  auto r = script_request();
  const std::vector<std::string> own = {"HOME=/home/u", "SLURM_CONF=/etc/slurm/slurm.conf",
                                        "SLURM_TIME_FORMAT=relative", "SLURM_MPI_TYPE=pmix"};
  r.environment = own;
  for (const char* e :
       {"SLURM_JOB_ID=77", "SLURM_NTASKS=8", "SLURM_MEM_PER_NODE=1000", "SLURM_CPUS_PER_TASK=4",
        "SLURM_STEP_ID=0", "SLURM_NNODES=2", "SLURM_TASKS_PER_NODE=4(x2)",
        "SLURM_NTASKS_PER_NODE=4", "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image=ubuntu"})
    r.environment.push_back(e);
  std::vector<std::string> notes;
  const auto id = h.controller->add(r, &notes).spec.id;
  EXPECT_EQ(h.campaign(id).environment, own);
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0],
            "environment: left out SLURM_JOB_ID, SLURM_NTASKS, SLURM_MEM_PER_NODE, "
            "SLURM_CPUS_PER_TASK, SLURM_STEP_ID, SLURM_NNODES, SLURM_TASKS_PER_NODE, "
            "SLURM_NTASKS_PER_NODE, SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image: "
            "Slurm set them for job 77, in which this command ran; each "
            "segment gets its own job's");
  // Outside a job they are the user's own settings, kept.
  r.name = "gpt2";
  r.environment = own;
  r.environment.push_back("SLURM_NTASKS=8");
  const auto second = h.controller->add(r).spec.id;
  EXPECT_EQ(h.campaign(second).environment.back(), "SLURM_NTASKS=8");
}

// The rendezvous of the job the add ran in (MASTER_ADDR/PORT, the trainer's rank overrides) and
// 24.05's SLURM_STEPMGR (no SLURM_STEP_ name) are that job's: each segment's ranks meet at their
// own job's, so they are left out with the others.
TEST(CampaignShape, AnAddFromInsideAJobLeavesOutThatJobsRendezvousVariables) {
  Harness h(config());
  auto r = script_request();
  r.environment = {"HOME=/home/u",           "SLURM_JOB_ID=77",    "MASTER_ADDR=node7",
                   "MASTER_PORT=29577",      "MIRAGE_RANK=0",      "MIRAGE_WORLD_SIZE=4",
                   "MIRAGE_LOCAL_RANK=0",    "MIRAGE_RUN_ID=77.0", "SLURM_STEPMGR=node7",
                   "MIRAGE_CKPT_DIR=/ckpt/A"};
  std::vector<std::string> notes;
  const auto id = h.controller->add(r, &notes).spec.id;
  EXPECT_EQ(h.campaign(id).environment,
            (std::vector<std::string>{"HOME=/home/u", "MIRAGE_CKPT_DIR=/ckpt/A"}));
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0],
            "environment: left out SLURM_JOB_ID, MASTER_ADDR, MASTER_PORT, MIRAGE_RANK, "
            "MIRAGE_WORLD_SIZE, MIRAGE_LOCAL_RANK, MIRAGE_RUN_ID, SLURM_STEPMGR: Slurm set them "
            "for job 77, in which this command ran; each segment gets its own job's");
}

// --no-export-env is sbatch --export=NONE on the command line (over the script's own --export
// line), with the daemon's MIRAGE_* names: the job loads the login environment on its node
// instead of an environment of the daemon's variables alone.
TEST(CampaignShape, NoExportEnvSubmitsExportNoneWithTheDaemonsNamesOverTheScriptsLine) {
  Harness h(config());
  const nlohmann::json asked = {
      {"name", "gpt"},
      {"script", "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --export=ALL\nsrun train\n"},
      {"segments", 2},
      {"environment", {"PATH=/usr/bin", "MIRAGE_CKPT_DIR=/ckpt/A"}},
      {"export_environment", false}};
  const auto id = h.controller->add(parse_campaign_request(asked)).spec.id;
  EXPECT_TRUE(h.campaign(id).environment.empty());
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 1u);
  std::vector<std::string> exports;
  for (const auto& a : SbatchSubmitter::arguments(h.slurm.submissions()[0].request))
    if (a.rfind("--export", 0) == 0) exports.push_back(a);
  EXPECT_EQ(exports, (std::vector<std::string>{
                         "--export=MIRAGE_CAMPAIGN_ID,MIRAGE_CAMPAIGN_NAME,MIRAGE_SEGMENT,"
                         "MIRAGE_SEGMENTS,MIRAGE_ATTEMPT,MIRAGE_DONE_FILE"}));
}

TEST(CampaignShape, TheDaemonsPartitionAndAccountStandInOnlyWhereTheScriptNamesNone) {
  auto cfg = config();
  cfg.partition = "batch";
  cfg.account = "site";
  Harness h(cfg);
  h.controller->add(script_request());
  auto named = script_request(std::string(kScript).insert(12, "#SBATCH -p gpu -A mine\n"));
  named.name = "named";
  h.controller->add(named);
  h.tick();
  ASSERT_EQ(h.slurm.submissions().size(), 2u);
  EXPECT_EQ(h.slurm.submissions()[0].request.options,
            (std::vector<std::string>{"--partition=batch", "--account=site"}));
  EXPECT_TRUE(h.slurm.submissions()[1].request.options.empty());
}

TEST(CampaignShape, TheShapeSlurmGrantedIsRecordedAndKept) {
  Harness h(config());
  auto r = script_request("#!/bin/bash\nsrun train\n");  // the site's defaults decide
  const auto id = h.controller->add(r).spec.id;
  EXPECT_EQ(h.campaign(id).spec.time_limit, 0);
  h.tick();
  h.slurm.grant(h.job_of(id, 0), 1, 0, 2 * kHour);
  h.tick();
  EXPECT_TRUE(h.campaign(id).shape_granted);
  EXPECT_EQ(h.campaign(id).spec.time_limit, 2 * kHour);
  EXPECT_EQ(h.campaign(id).spec.partition, "gpu");
  h.restart();
  EXPECT_TRUE(h.campaign(id).shape_granted);
  EXPECT_EQ(h.campaign(id).spec.time_limit, 2 * kHour);
  // The decisions use it: the successor goes at the predecessor's limit (fallback_lead 0), in
  // the tick at the limit and not the one a second before.
  h.slurm.start(h.job_of(id, 0));
  h.tick();
  h.clock.advance(2 * kHour - 1);
  h.tick();
  h.clock.advance(1);
  EXPECT_EQ(h.tick().submits.size(), 1u);
  EXPECT_EQ(h.slurm.submissions_tagged(id, 1).size(), 1u);
}

TEST(CampaignShape, AScriptSbatchWouldRefuseIsRefusedNamingTheLine) {
  Harness h(config());
  const std::string no_shebang = refusal_of(*h.controller, script_request("srun train\n"));
  EXPECT_NE(no_shebang.find("/home/u/gpt.sbatch:1: not a batch script"), std::string::npos)
      << no_shebang;
  const std::string bad_time =
      refusal_of(*h.controller, script_request("#!/bin/bash\n#SBATCH --time=soon\n"));
  EXPECT_NE(bad_time.find("/home/u/gpt.sbatch:2: field '#SBATCH --time'"), std::string::npos)
      << bad_time;
  EXPECT_TRUE(h.controller->campaigns().empty());
}

// Each script (with where its refusal points: ":LINE: field '#SBATCH ...'") is refused at
// `campaign add`, naming that line and saying `why`; no campaign is added.
void expect_refused_naming_the_line(const std::vector<std::pair<std::string, std::string>>& scripts,
                                    const std::string& why) {
  Harness h(config());
  for (const auto& [script, where] : scripts) {
    const std::string refusal = refusal_of(*h.controller, script_request(script));
    EXPECT_NE(refusal.find("/home/u/gpt.sbatch" + where), std::string::npos) << refusal;
    EXPECT_NE(refusal.find(why), std::string::npos) << refusal;
  }
  EXPECT_TRUE(h.controller->campaigns().empty());
}

// sbatch takes them, but each array task or hetjob component would carry the segment's tag (all
// but one cancelled as strays), and another cluster's job never shows in this one's queue.
TEST(CampaignShape, AScriptOfMoreThanOneJobOrOfAnotherClusterIsRefusedNamingTheLine) {
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH -N 1\n#SBATCH --array=0-3\n", ":3: field '#SBATCH --array=0-3'"},
       {"#!/bin/bash\n#SBATCH -N 1\n#SBATCH hetjob\n#SBATCH -N 2\n", ":3: field '#SBATCH hetjob'"},
       {"#!/bin/bash\n#SBATCH -M other\n", ":2: field '#SBATCH -M other'"}},
      "a campaign's segment is one job of this cluster");
}

// sbatch prints and exits 0 with no job id: the segment's outcome would never be settled.
TEST(CampaignShape, AScriptWithWhichSbatchSubmitsNothingIsRefusedNamingTheLine) {
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH -N 1\n#SBATCH --test-only\n", ":3: field '#SBATCH --test-only'"},
       {"#!/bin/bash\n#SBATCH --help\n", ":2: field '#SBATCH --help'"},
       {"#!/bin/bash\n#SBATCH --usage\n", ":2: field '#SBATCH --usage'"},
       {"#!/bin/bash\n#SBATCH -N 1 -V\n", ":2: field '#SBATCH -V'"},
       {"#!/bin/bash\n#SBATCH -Hh\n", ":2: field '#SBATCH -Hh'"}},
      "submits no job");
}

// sbatch --wait blocks until the job ends: the daemon's sbatch call would time out, the reply
// (the job id) lost.
TEST(CampaignShape, AScriptWithWhichSbatchWaitsForTheJobIsRefusedNamingTheLine) {
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH -N 1\n#SBATCH --wait\n", ":3: field '#SBATCH --wait'"},
       {"#!/bin/bash\n#SBATCH -W\n", ":2: field '#SBATCH -W'"},
       {"#!/bin/bash\n#SBATCH -HW\n", ":2: field '#SBATCH -HW'"}},
      "does not return until the job ends");
}

// A held segment would stay JobHeldUser with nothing to release it; a script's dependency would
// be kept on every retry and fallback, and refused once its job has left slurmctld.
TEST(CampaignShape, AScriptThatHoldsItsJobOrOrdersItBehindAnotherIsRefusedNamingTheLine) {
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH -N 1\n#SBATCH --hold\n", ":3: field '#SBATCH --hold'"},
       {"#!/bin/bash\n#SBATCH -HQ\n", ":2: field '#SBATCH -HQ'"}},
      "nothing would release it: mirage orders the segments itself");
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH --dependency=afterany:12\n",
        ":2: field '#SBATCH --dependency=afterany:12'"},
       {"#!/bin/bash\n#SBATCH -N 1\n#SBATCH -d afterok:7\n", ":3: field '#SBATCH -d'"}},
      "mirage orders the segments itself; for a job the training needs first (a preparation "
      "job), add the campaign once that job has finished");
}

// getopt gives a short option all that follows it, '=' included: "-N=2" asks for "=2" nodes.
TEST(CampaignShape, AScriptWithAShortOptionWrittenWithEqualsIsRefusedNamingTheLine) {
  expect_refused_naming_the_line(
      {{"#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH -N=2\n", ":3: field '#SBATCH -N'"},
       {"#!/bin/bash\n#SBATCH -t=1:00:00\n", ":2: field '#SBATCH -t'"},
       {"#!/bin/bash\n#SBATCH -p=gpu\n", ":2: field '#SBATCH -p'"}},
      "with its '=', as the value; write");
}

TEST(CampaignShape, TheSimulatedClusterNeedsATimeLimitFromTheFlagsOrTheScript) {
  auto cfg = config();
  cfg.time_limit_required = true;
  Harness h(cfg);
  EXPECT_THROW(h.controller->add(script_request("#!/bin/bash\nsrun train\n")), RequestError);
  EXPECT_NO_THROW(h.controller->add(script_request()));
}

}  // namespace
}  // namespace mirage::daemon
