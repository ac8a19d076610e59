// The #SBATCH lines of a batch script, read as sbatch reads them.
#include <gtest/gtest.h>

#include "mirage/daemon/slurm/BatchScriptDirectives.h"

namespace mirage::daemon {
namespace {

BatchScriptDirectives read(const std::string& script) {
  return read_batch_directives(script, "train.sbatch");
}

std::string error_of(const std::string& script) {
  const auto d = read(script);
  return d.error ? d.error->what() : "(no error)";
}

TEST(BatchScriptDirectives, ReadsLongFormsWithEqualsOrASpace) {
  const auto d = read(
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "#SBATCH --time 2-00:00:00\n"
      "#SBATCH --partition=gpu --account proj\n"
      "#SBATCH --qos=high\n"
      "#SBATCH --gres=gpu:a100:4\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 2);
  EXPECT_EQ(d.nodes->line, 2);
  EXPECT_EQ(d.time_limit->value, 2 * kDay);
  EXPECT_EQ(d.time_limit->text, "--time 2-00:00:00");
  EXPECT_EQ(d.partition->value, "gpu");
  EXPECT_EQ(d.account->value, "proj");
  EXPECT_EQ(d.account->line, 4);
  EXPECT_EQ(d.qos->value, "high");
  EXPECT_EQ(d.gpus_per_node(2), 4);
  EXPECT_TRUE(d.gpus_by_gres);
}

TEST(BatchScriptDirectives, ReadsShortFormsAttachedOrApart) {
  const auto d = read("#!/bin/sh\n#SBATCH -N3 -t 90\n#SBATCH -p debug -Aproj -q low\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 3);
  EXPECT_EQ(d.time_limit->value, 90 * kMinute);
  EXPECT_EQ(d.partition->value, "debug");
  EXPECT_EQ(d.account->value, "proj");
  EXPECT_EQ(d.qos->value, "low");
}

// getopt gives -N the value "=2": sbatch refuses it ("Invalid node count") or keeps the '='.
std::string short_option_with_equals_of(const std::string& script) {
  const auto d = read(script);
  return d.short_option_with_equals ? d.short_option_with_equals->what() : "";
}

TEST(BatchScriptDirectives, AShortOptionWithEqualsIsRefusedSayingWhatSbatchExpects) {
  EXPECT_EQ(short_option_with_equals_of("#!/bin/bash\n#SBATCH --job-name=x\n#SBATCH -N=2\n"),
            "train.sbatch:3: field '#SBATCH -N': '-N=2': sbatch reads what follows -N, '=2' with "
            "its '=', as the value; write -N 2, -N2 or --nodes=2");
  EXPECT_EQ(short_option_with_equals_of("#!/bin/bash\n#SBATCH -t=1:00:00\n"),
            "train.sbatch:2: field '#SBATCH -t': '-t=1:00:00': sbatch reads what follows -t, "
            "'=1:00:00' with its '=', as the value; write -t 1:00:00, -t1:00:00 or "
            "--time=1:00:00");
  // After a flag, as getopt reads a cluster of them.
  EXPECT_NE(short_option_with_equals_of("#!/bin/bash\n#SBATCH -HJ=x\n")
                .find("write -J x, -Jx or --job-name=x"),
            std::string::npos);
}

// A campaign stored before such lines were refused is read again at each submission: the lines
// after one are still its partition, account and output, as sbatch reads them.
TEST(BatchScriptDirectives, TheLinesAfterAShortOptionWithEqualsAreStillRead) {
  const auto d = read("#!/bin/bash\n#SBATCH -J=train\n#SBATCH -p gpu\n#SBATCH -A proj\n");
  EXPECT_FALSE(d.error);
  ASSERT_TRUE(d.short_option_with_equals);
  ASSERT_TRUE(d.partition);
  EXPECT_EQ(d.partition->value, "gpu");
  ASSERT_TRUE(d.account);
  EXPECT_EQ(d.account->value, "proj");
}

TEST(BatchScriptDirectives, SlurmTimeFormats) {
  const std::pair<const char*, Seconds> cases[] = {
      {"90", 90 * kMinute},         {"48:00:00", 48 * kHour},
      {"2-00:00:00", 2 * kDay},     {"1-12", kDay + 12 * kHour},
      {"10:30", 10 * kMinute + 30}, {"UNLIMITED", 0},  // the partition's limit
  };
  for (const auto& [text, seconds] : cases) {
    const auto d = read(std::string("#!/bin/bash\n#SBATCH --time=") + text + "\n");
    ASSERT_FALSE(d.error) << text;
    EXPECT_EQ(d.time_limit->value, seconds) << text;
  }
}

TEST(BatchScriptDirectives, GpusPerNodeAndPerJob) {
  auto d = read("#!/bin/bash\n#SBATCH --gpus-per-node=a100:8\n");
  EXPECT_EQ(d.gpus_per_node(4), 8);
  EXPECT_FALSE(d.gpus_by_gres);
  d = read("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus=6\n");
  EXPECT_EQ(d.gpu_count, GpuCount::kPerJob);
  EXPECT_EQ(d.gpus_per_node(2), 3);
  d = read("#!/bin/bash\n#SBATCH -G 5\n");
  EXPECT_EQ(d.gpus_per_node(2), 3);  // rounded up: no node gets fewer than it needs
  d = read("#!/bin/bash\n#SBATCH --gres=shard:2\n");
  EXPECT_FALSE(d.gpus);  // a generic resource that is no GPU
}

TEST(BatchScriptDirectives, ALaterDirectiveReplacesAnEarlierOne) {
  const auto d = read("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --nodes=4\n");
  EXPECT_EQ(d.nodes->value, 4);
  EXPECT_EQ(d.nodes->line, 3);
}

// sbatch keeps the last --gres whole (slurm_opt.c's arg_set_gres): the job runs with no GPU.
TEST(BatchScriptDirectives, ALaterGresWithoutAGpuLeavesNoGpus) {
  auto d = read("#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH --gres=nvme:1\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_FALSE(d.gpus);
  EXPECT_EQ(d.gpus_per_node(1), 0);
  EXPECT_FALSE(d.gpus_by_gres);
  d = read("#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH --gres=gpu:a100:2,nvme:1\n");
  EXPECT_EQ(d.gpus_per_node(1), 2);
  EXPECT_EQ(d.gpu_request, "gpu:a100:2,nvme:1");
  EXPECT_EQ(d.gpus->line, 3);
  // --gpus-per-node is another option: a later --gres leaves it.
  d = read("#!/bin/bash\n#SBATCH --gpus-per-node=4\n#SBATCH --gres=nvme:1\n");
  EXPECT_EQ(d.gpus_per_node(1), 4);
}

TEST(BatchScriptDirectives, TheLastOfEachShapeOptionWins) {
  const auto d = read(
      "#!/bin/bash\n#SBATCH -N 2 --time=1:00:00 -p a -A x -q low --gpus-per-node=2\n"
      "#SBATCH --nodes=3 -t 30 --partition=b --account=y --qos=high --gpus-per-node=8\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 3);
  EXPECT_EQ(d.time_limit->value, 30 * kMinute);
  EXPECT_EQ(d.partition->value, "b");
  EXPECT_EQ(d.account->value, "y");
  EXPECT_EQ(d.qos->value, "high");
  EXPECT_EQ(d.gpus_per_node(3), 8);
}

// Only what sbatch reads counts: directives before the first command, outside comments.
TEST(BatchScriptDirectives, ReadsOnlyTheLinesSbatchReads) {
  const std::pair<const char*, int> cases[] = {
      {"#!/bin/bash\n# a comment\n\n#SBATCH --nodes=2\necho start\n#SBATCH --nodes=8\n", 2},
      {"#!/bin/bash\n#SBATCH --output logs/seg-%j.txt --ntasks-per-node=2 # --nodes=9\n", 0},
      {"#!/bin/bash\n##SBATCH --nodes=7\n  #SBATCH --nodes=6\n", 0},
      {"#!/bin/bash\n#SBATCH--nodes=5\n", 5},  // sbatch needs no space after the word
      {"#!/bin/bash\n#SLURM --nodes=4\n", 4},  // the old word, still read
      {"#!/bin/bash\n#SBATCH --job-name \"two words\" -N 3\n", 3},
  };
  for (const auto& [script, nodes] : cases) {
    const auto d = read(script);
    ASSERT_FALSE(d.error) << script;
    EXPECT_EQ(d.nodes ? d.nodes->value : 0, nodes) << script;
  }
}

TEST(BatchScriptDirectives, AScriptWithoutAShebangIsRefusedAsSbatchWould) {
  EXPECT_EQ(error_of("echo hi\n#SBATCH --nodes=2\n"),
            "train.sbatch:1: not a batch script: the first line must be #! and an interpreter's "
            "path, such as #!/bin/bash (sbatch refuses it too); got 'echo hi'");
  EXPECT_NE(error_of("").find("the script is empty"), std::string::npos);
}

TEST(BatchScriptDirectives, AMalformedValueNamesTheLineTheOptionAndWhatWasExpected) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --nodes=two\n"),
            "train.sbatch:3: field '#SBATCH --nodes': expected a node count such as 2 or 2-4, got "
            "'two'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH -t soon\n"),
            "train.sbatch:2: field '#SBATCH --time': expected a time limit such as 2-00:00:00, "
            "48:00:00 or 90 (minutes), got 'soon'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --gpus-per-node=many\n"),
            "train.sbatch:2: field '#SBATCH --gpus-per-node': expected a GPU count such as 4 or "
            "a100:4, got 'many'");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --nodes\n"),
            "train.sbatch:2: field '#SBATCH --nodes': expected a value after --nodes");
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH --nodes=4-2\n").find("got '4-2'"), std::string::npos);
}

// sbatch accepts an unambiguous abbreviation of a long option, so the shape reads it too.
TEST(BatchScriptDirectives, ReadsAbbreviatedLongOptionsAsSbatchDoes) {
  const auto d = read("#!/bin/bash\n#SBATCH --part=gpu --accou proj --gpus-per-n=4\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.partition->value, "gpu");
  EXPECT_EQ(d.account->value, "proj");
  EXPECT_EQ(d.gpus_per_node(1), 4);
}

// What sbatch reads as one option's value is no option of its own, on the next line too.
TEST(BatchScriptDirectives, AValueIsTheWordAfterItsOption) {
  const auto d =
      read("#!/bin/bash\n#SBATCH --job-name -N --nodes 3\n#SBATCH --output\n#SBATCH x\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 3);
}

TEST(BatchScriptDirectives, AnUnknownOptionIsRefusedAsSbatchWouldNamingTheLine) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --tiem=48:00:00\n"),
            "train.sbatch:3: field '#SBATCH --tiem': unknown option --tiem: no sbatch from Slurm "
            "22.05 to 24.11 has it, sbatch would refuse the script (\"unrecognized option\")");
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH -N 2 -y 1\n"),
            "train.sbatch:2: field '#SBATCH -y': unknown option -y in '-y': no sbatch from Slurm "
            "22.05 to 24.11 has it, sbatch would refuse the script (\"invalid option\")");
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH -HI\n").find("unknown option -I in '-HI'"),
            std::string::npos);
  // An abbreviation of several options: sbatch cannot tell which.
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --tim=5\n"),
            "train.sbatch:2: field '#SBATCH --tim': --tim is ambiguous (--time, --time-min): "
            "sbatch would refuse the script");
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH --hold=yes\n").find("--hold takes no value"),
            std::string::npos);
  // An option sbatch lacks (srun's) and a value missing at the end of the directives.
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH --pty\n").find("unknown option --pty"),
            std::string::npos);
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --output\n"),
            "train.sbatch:2: field '#SBATCH --output': expected a value after --output");
}

// The options of every release from 22.05 to 24.11, those some releases dropped included.
TEST(BatchScriptDirectives, TheOptionsOfEverySupportedSlurmReleaseAreAccepted) {
  for (const char* line :
       {"--time-min=10 --mail-type=END --mail-user=me --exclusive --requeue -HQ -k -v -vv",
        "--power=level",                                                // 22.05 to 23.11
        "--export-file=env.txt",                                        // all but 23.11
        "--tres-per-task=gres/gpu:1 --extra=x",                         // from 23.02
        "--resv-ports --segment=2 --stepmgr",                           // from 24.05
        "--oom-kill-step=1",                                            // 24.11
        "--container-image=nvcr.io#pytorch --no-container-mount-home",  // pyxis, a SPANK plugin
        "--signal=B:USR1@300 --dependency=afterany:12 --array=0-3%1 -o out-%j.txt --"}) {
    const auto d = read(std::string("#!/bin/bash\n#SBATCH ") + line + "\n");
    EXPECT_FALSE(d.error) << line << ": " << d.error->what();
  }
}

TEST(BatchScriptDirectives, ShellTextInADirectiveIsRefusedAsSbatchWould) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH --nodes=1 ; touch /tmp/x\n"),
            "train.sbatch:2: field '#SBATCH': ';' is not an option: sbatch would refuse the "
            "script (\"Invalid directive found in batch script: ;\"); commands belong after the "
            "#SBATCH lines");
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH -N 1 && echo\n").find("'&&' is not an option"),
            std::string::npos);
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCHX --nodes=6\n").find("'X' is not an option"),
            std::string::npos);
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH -- -N 2\n").find("'-N' is not an option"),
            std::string::npos);
  // After a '#' (even inside a word) and after an empty word, sbatch reads nothing more.
  EXPECT_FALSE(read("#!/bin/bash\n#SBATCH --nodes=1 # ; touch /tmp/x\n").error);
  EXPECT_FALSE(read("#!/bin/bash\n#SBATCH --job-name=a#b ; c\n").error);
  EXPECT_FALSE(read("#!/bin/bash\n#SBATCH -N 1 \"\" ; c\n").error);
}

TEST(BatchScriptDirectives, AnUnmatchedQuoteIsRefused) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --job-name=\"two words\n"),
            "train.sbatch:3: field '#SBATCH': unmatched \" in '#SBATCH --job-name=\"two words': "
            "sbatch would refuse the script");
  EXPECT_FALSE(read("#!/bin/bash\n#SBATCH --job-name=it\\'s\n").error);  // escaped
}

TEST(BatchScriptDirectives, DosLineBreaksAreRefusedNamingTheFirstLineWithOne) {
  EXPECT_EQ(error_of("#!/bin/bash\n#SBATCH -N 1\n#SBATCH -t 10\r\nsrun x\r\n"),
            "train.sbatch:3: DOS line breaks (\\r\\n) from this line: sbatch would refuse the "
            "script (\"Batch script contains DOS line breaks\"); convert it with dos2unix");
  EXPECT_NE(error_of(std::string("#!/bin/bash\necho a\0b\n", 21))
                .find("train.sbatch:2: the "
                      "script holds a NUL byte"),
            std::string::npos);
}

// sbatch checks the whole script for them, not only its directives.
TEST(BatchScriptDirectives, DosLineBreaksAfterTheDirectivesAreRefusedToo) {
  EXPECT_NE(error_of("#!/bin/bash\n#SBATCH -N 1\nsrun x\n\necho done\r\n")
                .find("train.sbatch:5: DOS line breaks"),
            std::string::npos);
  EXPECT_FALSE(read("#!/bin/bash\n#SBATCH -N 1\necho 'a\rb'\n").error);  // no \r\n
}

// A comment or a job name in Latin-1 is the script's own: sbatch passes the bytes on.
TEST(BatchScriptDirectives, BytesThatAreNotUtf8AreAccepted) {
  const auto d = read("#!/bin/bash\n# caf\xe9\n#SBATCH -J caf\xe9 -N 2\necho \xff\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 2);
}

// The shape is the first component's; a later one is checked all the same.
TEST(BatchScriptDirectives, AHeterogeneousJobsShapeIsItsFirstComponents) {
  const auto d = read("#!/bin/bash\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 5\n");
  ASSERT_FALSE(d.error) << d.error->what();
  EXPECT_EQ(d.nodes->value, 2);
  EXPECT_TRUE(read("#!/bin/bash\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH --tiem=1\n").error);
}

TEST(BatchScriptDirectives, AScriptOverSlurmsLimitIsRefusedNamingItsSize) {
  EXPECT_FALSE(script_size_problem("train.sbatch", kMaxScriptBytes));
  const auto why = script_size_problem("train.sbatch", kMaxScriptBytes + 1);
  ASSERT_TRUE(why);
  EXPECT_STREQ(why->what(),
               "train.sbatch: the script is 4194305 bytes, over the limit of 4194304 bytes (4 "
               "MiB, Slurm's default SchedulerParameters=max_script_size): slurmctld would "
               "refuse it");
}

TEST(BatchScriptDirectives, WhatPrecedesAMalformedLineIsKept) {
  const auto d = read("#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --nodes=x\n");
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.partition->value, "gpu");
}

}  // namespace
}  // namespace mirage::daemon
