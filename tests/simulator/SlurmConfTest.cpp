// A site's slurm.conf as the simulator's scheduler and priority settings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mirage/core/Error.h"
#include "mirage/simulator/SlurmConf.h"

namespace mirage {
namespace {

std::string write_conf(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mirage-slurmconf-" + std::to_string(::getpid()) + "-" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

ClusterSpec machine() {
  ClusterSpec s;
  s.nodes = 88;
  s.gpus_per_node = 3;
  return s;
}

TEST(SlurmConf, ReadsTheSchedulerAndPriorityBySlurmsNames) {
  const std::string path = write_conf("site.conf",
                                      "ClusterName=ls6  # a comment\n"
                                      "NodeName=c[001-088] Gres=gpu:a100:3\n"
                                      "SchedulerType=sched/backfill\n"
                                      "SchedulerParameters=bf_window=2880,bf_interval=600,"
                                      "bf_resolution=600,bf_max_job_user=4,bf_continue\n"
                                      "AccountingStorageType=accounting_storage/slurmdbd\n"
                                      "PriorityType=priority/multifactor\n"
                                      "PriorityWeightAge=1000\n"
                                      "PriorityWeightFairshare=10000\n"
                                      "PriorityWeightJobSize=500\n"
                                      "PriorityFavorSmall=YES\n"
                                      "PriorityMaxAge=14-0\n"
                                      "PriorityDecayHalfLife=7-0\n"
                                      "PriorityCalcPeriod=2\n");
  const SlurmConf c = read_slurm_conf(path, machine());
  std::filesystem::remove(path);
  EXPECT_EQ(c.spec.nodes, 88);
  EXPECT_EQ(c.spec.gpus_per_node, 3);
  EXPECT_EQ(c.spec.scheduler.backfill, BackfillMode::kSlurm);
  EXPECT_EQ(c.spec.scheduler.bf_window, 2880 * kMinute);
  EXPECT_EQ(c.spec.scheduler.bf_interval, 600);
  EXPECT_EQ(c.spec.scheduler.bf_resolution, 600);
  EXPECT_EQ(c.spec.scheduler.bf_max_job_user, 4);
  EXPECT_EQ(c.spec.scheduler.bf_max_job_test, 500);  // Slurm's default
  EXPECT_EQ(c.spec.scheduler.sched_interval, 60);
  EXPECT_EQ(c.spec.priority.weight_age, 1000);
  EXPECT_EQ(c.spec.priority.weight_fairshare, 10000);
  EXPECT_EQ(c.spec.priority.weight_job_size, 500);
  EXPECT_TRUE(c.spec.priority.favor_small);
  EXPECT_EQ(c.spec.priority.max_age, 14 * kDay);
  EXPECT_EQ(c.spec.priority.decay_half_life, 7 * kDay);
  EXPECT_EQ(c.spec.scheduler.priority_calc_period, 2 * kMinute);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "SchedulerParameters bf_continue is not modelled by the simulator");
}

// What the file leaves out takes Slurm's defaults: weights 0; without slurmdbd Slurm ignores
// the age and fairshare factors, and so does the simulator.
TEST(SlurmConf, WhatTheFileLeavesOutIsSlurmsDefault) {
  const std::string path = write_conf("bare.conf",
                                      "SchedulerType=sched/builtin\n"
                                      "PriorityType=priority/multifactor\n"
                                      "PriorityWeightAge=1000\n");
  const SlurmConf c = read_slurm_conf(path, machine());
  std::filesystem::remove(path);
  EXPECT_EQ(c.spec.scheduler.backfill, BackfillMode::kNone);
  EXPECT_EQ(c.spec.priority.weight_age, 0);
  EXPECT_EQ(c.spec.priority.weight_job_size, 0);
  EXPECT_EQ(c.spec.priority.max_age, 7 * kDay);
  EXPECT_EQ(c.spec.scheduler.priority_calc_period, 5 * kMinute);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("ignored by Slurm without SlurmDBD"), std::string::npos);
}

TEST(SlurmConf, ABadValueNamesTheFileTheLineAndTheKey) {
  const auto error = [](const std::string& text) {
    const std::string path = write_conf("bad.conf", text);
    try {
      read_slurm_conf(path, machine());
    } catch (const InputError& e) {
      std::filesystem::remove(path);
      return std::string(e.what());
    }
    std::filesystem::remove(path);
    return std::string();
  };
  EXPECT_NE(
      error("PriorityType=priority/multifactor\n\nPriorityWeightAge=lots\n")
          .find("bad.conf:3: field 'PriorityWeightAge': expected a number from 0, got 'lots'"),
      std::string::npos);
  EXPECT_NE(error("SchedulerParameters=bf_window=2d\n")
                .find("bad.conf:1: field 'SchedulerParameters:bf_window': expected a number"),
            std::string::npos);
  EXPECT_NE(error("SchedulerType=sched/wiki\n")
                .find("field 'SchedulerType': expected sched/backfill or sched/builtin"),
            std::string::npos);
  EXPECT_NE(error("PriorityType=priority/multifactor\nPriorityMaxAge=forever\n")
                .find("bad.conf:2: field 'PriorityMaxAge': expected a duration"),
            std::string::npos);
}

}  // namespace
}  // namespace mirage
