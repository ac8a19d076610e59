// The SQLite store: what goes in comes back after a reopen.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "TestSupport.h"
#include "mirage/daemon/store/CampaignStore.h"
#include "mirage/daemon/store/SnapshotBlob.h"

namespace mirage::daemon {
namespace {

using testing::TempDir;

CampaignRecord sample_record() {
  CampaignRecord r;
  r.spec.name = "gpt2";
  r.spec.script = "#!/bin/bash\nsrun train\n";
  r.spec.partition = "gpu";
  r.spec.policy = "average";
  r.spec.segment_count = 3;
  r.spec.nodes = 2;
  r.spec.gpus_per_node = 4;
  r.spec.time_limit = 48 * kHour;
  r.spec.overlap = OverlapMode::kHandoff;
  r.spec.handoff_grace = 120;
  r.script_path = "/home/u/train.sh";
  r.owner_uid = 1000;
  r.account = "proj";
  r.work_dir = "/home/u";
  r.environment = {"A=1", "B=two words"};
  r.created = 100;
  return r;
}

TEST(CampaignStore, CampaignsSurviveAReopen) {
  TempDir dir;
  std::string id_before;
  std::int64_t id = 0;
  {
    CampaignStore store(dir.file("s.db"));
    id_before = store.store_id();
    EXPECT_EQ(id_before.size(), 8u);
    CampaignRecord r = sample_record();
    store.add_campaign(r);
    id = r.spec.id;
    EXPECT_GT(id, 0);
    ASSERT_EQ(r.segments.size(), 3u);
    r.segments[0].seg.attempts = 1;
    r.segments[0].submitting = true;
    r.segments[0].intent_time = 200;
    store.begin_submission(id, r.segments[0], {store.store_id(), id, 0, 1}, "first segment");
    r.segments[0].submitting = false;
    r.segments[0].seg.slurm_job_id = 77;
    r.segments[0].seg.state = SegmentState::kRunning;
    r.segments[0].seg.submit_time = 201;
    r.segments[0].seg.start_time = 300;
    store.finish_submission(id, r.segments[0], 77);
    r.state = CampaignState::kPaused;
    store.save_campaign_state(r);
  }
  CampaignStore store(dir.file("s.db"));
  EXPECT_EQ(store.store_id(), id_before);
  const auto all = store.load_campaigns();
  ASSERT_EQ(all.size(), 1u);
  const CampaignRecord& r = all[0];
  EXPECT_EQ(r.spec.id, id);
  EXPECT_EQ(r.spec.name, "gpt2");
  EXPECT_EQ(r.spec.script, "#!/bin/bash\nsrun train\n");
  EXPECT_EQ(r.spec.policy, "average");
  EXPECT_EQ(r.spec.overlap, OverlapMode::kHandoff);
  EXPECT_EQ(r.spec.handoff_grace, 120);
  EXPECT_EQ(r.spec.time_limit, 48 * kHour);
  EXPECT_EQ(r.environment, (std::vector<std::string>{"A=1", "B=two words"}));
  EXPECT_EQ(r.state, CampaignState::kPaused);
  EXPECT_EQ(r.owner_uid, 1000u);
  ASSERT_EQ(r.segments.size(), 3u);
  EXPECT_EQ(r.segments[0].seg.slurm_job_id, 77);
  EXPECT_EQ(r.segments[0].seg.state, SegmentState::kRunning);
  EXPECT_EQ(r.segments[0].seg.start_time, 300);
  EXPECT_FALSE(r.segments[0].submitting);
  EXPECT_EQ(r.segments[1].seg.state, SegmentState::kPlanned);
  const auto subs = store.submissions(id);
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].state, "submitted");
  EXPECT_EQ(subs[0].job, 77);
  EXPECT_EQ(subs[0].tag, JobTag({store.store_id(), id, 0, 1}).str());
  EXPECT_EQ(subs[0].reason, "first segment");
}

TEST(CampaignStore, TheNewFieldsSurviveAReopen) {
  TempDir dir;
  std::int64_t id = 0;
  {
    CampaignStore store(dir.file("s.db"));
    CampaignRecord r = sample_record();
    r.spec.segment_count = 0;  // open-ended: one segment planned
    r.qos = "high";
    r.sbatch_options = {"--nodes=2", "--qos=high"};
    r.max_retries = 5;
    r.done_file = "/home/u/done";
    store.add_campaign(r);
    id = r.spec.id;
    ASSERT_EQ(r.segments.size(), 1u);
    SegmentRecord more;
    more.seg.index = 1;
    store.save_segment(id, more);
    r.spec.time_limit = 2 * kHour;
    r.shape_granted = true;
    store.save_campaign_shape(r);
  }
  CampaignStore store(dir.file("s.db"));
  const CampaignRecord r = store.load_campaigns().at(0);
  EXPECT_TRUE(r.open_ended());
  EXPECT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[1].seg.index, 1);
  EXPECT_EQ(r.qos, "high");
  EXPECT_EQ(r.sbatch_options, (std::vector<std::string>{"--nodes=2", "--qos=high"}));
  EXPECT_EQ(r.max_retries, 5);
  EXPECT_EQ(r.done_file, "/home/u/done");
  EXPECT_TRUE(r.shape_granted);
  EXPECT_EQ(r.spec.time_limit, 2 * kHour);
}

// A store of schema 1 (before shapes came from the script), 2 (before the fallback chain), 3
// (before decisions recorded expected starts), 4 (before segments lost unseen and request
// keys), 5 (before the waits predicted and got), 6 (before job names carried the store id), 7
// (before an attempt's twin was recorded) or 8 (before a hand-off's sends were recorded):
// today's without the columns the later schemas added, holding one campaign with a running first
// segment and one decision.
std::int64_t write_old_store(const std::string& path, int schema) {
  std::int64_t id = 0;
  {
    CampaignStore store(path);
    CampaignRecord r = sample_record();
    r.account.clear();
    store.add_campaign(r);
    id = r.spec.id;
    r.segments[0].seg.attempts = 1;
    r.segments[0].submitting = true;
    store.begin_submission(id, r.segments[0], {store.store_id(), id, 0, 1}, "first segment");
    r.segments[0].submitting = false;
    r.segments[0].seg.state = SegmentState::kRunning;
    r.segments[0].seg.slurm_job_id = 55;
    store.finish_submission(id, r.segments[0], 55);
    store.log_decision({id, 1, 1000, "wait", "forecast", 1});
  }
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  std::string sql = "ALTER TABLE campaigns DROP COLUMN sbatch_ignores_pbs;";
  if (schema <= 8)
    sql +=
        "ALTER TABLE segments DROP COLUMN signal_sent_at;"
        "ALTER TABLE segments DROP COLUMN cancel_sent_at;";
  if (schema <= 7) sql += "ALTER TABLE submissions DROP COLUMN twin_job;";
  if (schema <= 6) sql += "ALTER TABLE campaigns DROP COLUMN job_names_carry_store;";
  if (schema <= 5) sql += "DROP TABLE wait_predictions;";
  if (schema <= 4)
    sql +=
        "DROP INDEX campaigns_by_request_key;"
        "ALTER TABLE campaigns DROP COLUMN request_key;"
        "ALTER TABLE segments DROP COLUMN lost_at;"
        "ALTER TABLE segments DROP COLUMN output_file;"
        "ALTER TABLE segments DROP COLUMN adopted_tag;";
  if (schema <= 3)
    sql +=
        "ALTER TABLE decisions DROP COLUMN forecast_start;"
        "ALTER TABLE decisions DROP COLUMN slurm_start;"
        "ALTER TABLE decisions DROP COLUMN slurm_note;";
  if (schema <= 2)
    sql +=
        "ALTER TABLE campaigns DROP COLUMN fallback_chain;"
        "ALTER TABLE campaigns DROP COLUMN max_hours;"
        "ALTER TABLE segments DROP COLUMN held_behind;"
        "ALTER TABLE segments DROP COLUMN released_at;";
  if (schema == 1)
    sql +=
        "ALTER TABLE campaigns DROP COLUMN qos;"
        "ALTER TABLE campaigns DROP COLUMN sbatch_options;"
        "ALTER TABLE campaigns DROP COLUMN max_retries;"
        "ALTER TABLE campaigns DROP COLUMN done_file;"
        "ALTER TABLE campaigns DROP COLUMN shape_granted;"
        "ALTER TABLE submissions DROP COLUMN outcome;"
        "ALTER TABLE submissions DROP COLUMN reason;";
  sql += "PRAGMA user_version=" + std::to_string(schema) + ";";
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return id;
}

// Runs `sql` on the store at `path` as another program would.
void exec_on(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// segments.adopted_tag came to schema 5 after stores of 5 were written: one of those has no such
// column, and its migration (from 5) adds none; it is added at the open, and the job is kept.
TEST(CampaignStore, AStoreOfSchema5WithoutAdoptedTagKeepsItsJob) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  const std::int64_t id = write_old_store(path, 5);
  exec_on(path, "ALTER TABLE segments DROP COLUMN adopted_tag;");
  CampaignStore store(path);
  const auto all = store.load_campaigns();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].spec.id, id);
  EXPECT_EQ(all[0].segments.at(0).seg.slurm_job_id, 55);
  EXPECT_EQ(all[0].segments.at(0).adopted_tag, "");
}

// submissions.reason came to schema 2 after stores of 2 were written: such a store can still
// begin a submission once opened, and keeps its reason.
TEST(CampaignStore, AStoreOfSchema2WithoutReasonCanBeginASubmission) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  const std::int64_t id = write_old_store(path, 2);
  exec_on(path, "ALTER TABLE submissions DROP COLUMN reason;");
  CampaignStore store(path);
  SegmentRecord next = store.load_campaigns().at(0).segments.at(1);
  next.seg.attempts = 1;
  next.submitting = true;
  store.begin_submission(id, next, {store.store_id(), id, 1, 1}, "segment 0 (job 55) ended");
  EXPECT_EQ(store.submissions(id).at(0).reason, "");
  EXPECT_EQ(store.submissions(id).at(1).reason, "segment 0 (job 55) ended");
}

// A store that was stamped with today's schema by a migration that missed a column (one of the
// two windows above) is repaired at its next open, whatever its version says.
TEST(CampaignStore, AStoreStampedCurrentButMissingAColumnIsRepaired) {
  TempDir dir;
  const std::string path = dir.file("s.db");
  const std::int64_t id = write_old_store(path, 8);
  { CampaignStore migrated(path); }
  exec_on(path,
          "ALTER TABLE segments DROP COLUMN adopted_tag;"
          "ALTER TABLE submissions DROP COLUMN reason;");
  CampaignStore store(path);
  EXPECT_EQ(store.load_campaigns().at(0).segments.at(0).seg.slurm_job_id, 55);
  EXPECT_EQ(store.submissions(id).at(0).job, 55);
}

// Nothing says whether a hand-off step committed before was sent: it is sent again (harmless).
TEST(CampaignStore, AStoreOfSchema8IsMigratedAndItsHandoffStepsAreNotKnownSent) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 8);
  {
    CampaignStore store(dir.file("old.db"));
    SegmentRecord s = store.load_campaigns().at(0).segments[0];
    EXPECT_EQ(s.seg.slurm_job_id, 55);
    EXPECT_EQ(s.signal_sent_at, -1);
    EXPECT_EQ(s.cancel_sent_at, -1);
    s.signalled_at = 1000;
    s.signal_sent_at = 1002;
    s.killed_at = 1300;
    s.cancel_sent_at = 1301;
    store.save_segment(id, s);
  }
  CampaignStore again(dir.file("old.db"));  // kept from then on
  const SegmentRecord s = again.load_campaigns().at(0).segments[0];
  EXPECT_EQ(s.signal_sent_at, 1002);
  EXPECT_EQ(s.cancel_sent_at, 1301);
}

TEST(CampaignStore, AStoreOfSchema7IsMigratedAndItsAttemptsHaveNoTwin) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 7);
  CampaignStore store(dir.file("old.db"));
  ASSERT_EQ(store.submissions(id).size(), 1u);
  EXPECT_EQ(store.submissions(id)[0].job, 55);
  EXPECT_EQ(store.submissions(id)[0].twin, 0);
}

TEST(CampaignStore, AStoreOfSchema6KeepsItsCampaignsJobNamesAndNamesNewOnesByTheStore) {
  TempDir dir;
  write_old_store(dir.file("old.db"), 6);
  CampaignStore store(dir.file("old.db"));
  EXPECT_FALSE(store.load_campaigns().at(0).job_names_carry_store)
      << "a campaign of before would look for its jobs in flight under names they do not have";
  CampaignRecord added = sample_record();
  store.add_campaign(added);
  EXPECT_TRUE(store.load_campaigns().at(1).job_names_carry_store);
}

TEST(CampaignStore, AStoreOfSchema9KeepsSbatchApplyingItsCampaignsPbsLinesAndIgnoresNewOnes) {
  TempDir dir;
  write_old_store(dir.file("old.db"), 9);
  CampaignStore store(dir.file("old.db"));
  EXPECT_FALSE(store.load_campaigns().at(0).sbatch_ignores_pbs)
      << "a ported script's #PBS limit or account would change in the middle of its campaign";
  CampaignRecord added = sample_record();
  store.add_campaign(added);
  EXPECT_TRUE(store.load_campaigns().at(1).sbatch_ignores_pbs);
}

TEST(CampaignStore, AStoreOfSchema5IsMigratedAndKeepsWaitPredictionsFromThenOn) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 5);
  {
    CampaignStore store(dir.file("old.db"));
    EXPECT_EQ(store.load_campaigns().at(0).segments[0].seg.slurm_job_id, 55);
    EXPECT_EQ(store.predicted_waits(std::nullopt), 0u);
    WaitPredictionRecord w;
    w.campaign = id;
    w.segment = 1;
    w.attempt = 1;
    w.queued_at = 1000;
    w.predictor = "waits.json";
    w.predictor_digest = "abc";
    w.model = {60, 120, 300, 600, 1200, 2400, 3600};
    w.stated = {120, 240, 600, 1200, 2400, 4800, 7200};
    store.record_wait_prediction(w);
    w.model[3] = 1;  // a submission sent again: what was said first stands
    store.record_wait_prediction(w);
    EXPECT_FALSE(store.record_wait_start(id, 1, 2, 2000));  // no prediction for attempt 2
    const auto started = store.record_wait_start(id, 1, 1, 1900);
    ASSERT_TRUE(started);
    EXPECT_EQ(started->wait, 900);
    EXPECT_FALSE(store.record_wait_start(id, 1, 1, 2500));  // its start is known already
  }
  CampaignStore again(dir.file("old.db"));  // nothing lost on restart
  const auto waits = again.started_waits(id, 10);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].wait, 900);
  EXPECT_EQ(waits[0].model[3], 600);
  EXPECT_EQ(waits[0].stated[6], 7200);
  EXPECT_EQ(waits[0].predictor_digest, "abc");
  EXPECT_TRUE(again.started_waits(id, 10, "another").empty());
  EXPECT_TRUE(again.started_waits(id + 1, 10).empty());
}

TEST(CampaignStore, AStoreOfSchema4IsMigratedWithNothingLostAndNoKey) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 4);
  CampaignStore store(dir.file("old.db"));
  const auto all = store.load_campaigns();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].spec.id, id);
  EXPECT_TRUE(all[0].request_key.empty());
  EXPECT_FALSE(all[0].segments[0].fate_unknown());
  EXPECT_EQ(all[0].segments[0].seg.slurm_job_id, 55);
  EXPECT_EQ(store.decisions(id, 10).size(), 1u);
}

TEST(CampaignStore, AStoreOfSchema1IsMigratedAndItsCampaignsKeepTheirShape) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 1);
  {
    CampaignStore store(dir.file("old.db"));
    const auto all = store.load_campaigns();
    ASSERT_EQ(all.size(), 1u);
    const CampaignRecord& r = all[0];
    EXPECT_EQ(r.spec.id, id);
    EXPECT_EQ(r.spec.name, "gpt2");
    EXPECT_EQ(r.spec.segment_count, 3);
    ASSERT_EQ(r.segments.size(), 3u);
    EXPECT_EQ(r.segments[0].seg.slurm_job_id, 55);
    EXPECT_EQ(r.segments[0].seg.state, SegmentState::kRunning);
    // Submitted with every flag before: sbatch gets them all, so nothing changes for it.
    EXPECT_EQ(r.sbatch_options, (std::vector<std::string>{"--nodes=2", "--time=2-00:00:00",
                                                          "--gres=gpu:4", "--partition=gpu"}));
    EXPECT_EQ(r.max_retries, -1);  // the daemon's default
    EXPECT_EQ(r.done_file, "");    // the controller gives it one on load
    EXPECT_FALSE(r.shape_granted);
    EXPECT_EQ(store.submissions(id).at(0).job, 55);
    EXPECT_EQ(store.submissions(id).at(0).outcome, "");
    EXPECT_EQ(store.submissions(id).at(0).reason, "");  // from before reasons were kept
  }
  CampaignStore again(dir.file("old.db"));  // migrated once: opens as today's schema
  EXPECT_EQ(again.load_campaigns().at(0).sbatch_options.size(), 4u);
}

TEST(CampaignStore, AStoreOfSchema2IsMigratedAndItsCampaignsRunWithoutAFallbackChain) {
  TempDir dir;
  write_old_store(dir.file("old.db"), 2);
  CampaignStore store(dir.file("old.db"));
  const CampaignRecord r = store.load_campaigns().at(0);
  EXPECT_FALSE(r.fallback_chain);  // as they ran before
  EXPECT_EQ(r.max_hours, 0);
  EXPECT_EQ(r.segments.at(0).held_behind, 0);
  EXPECT_EQ(r.segments.at(0).released_at, -1);
  EXPECT_EQ(r.segments.at(0).seg.slurm_job_id, 55);
}

TEST(CampaignStore, AStoreOfSchema3IsMigratedAndItsDecisionsHaveNoExpectedStarts) {
  TempDir dir;
  const std::int64_t id = write_old_store(dir.file("old.db"), 3);
  CampaignStore store(dir.file("old.db"));
  const auto decisions = store.decisions(id, 10);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].action, "wait");
  EXPECT_EQ(decisions[0].forecast_start, kUnknownTime);
  EXPECT_EQ(decisions[0].slurm_start, kUnknownTime);
  EXPECT_EQ(decisions[0].slurm_note, "");
  DecisionRecord d{id, 1, 2000, "wait", "forecast", 1};
  d.forecast_start = 5000;
  d.slurm_start = 6000;
  store.log_decision(d);
  EXPECT_EQ(store.decisions(id, 10).back().slurm_start, 6000);
  EXPECT_EQ(store.decisions(id, 10).back().forecast_start, 5000);
}

TEST(CampaignStore, TheFallbackChainAndTheCapSurviveAReopen) {
  TempDir dir;
  std::int64_t id = 0;
  {
    CampaignStore store(dir.file("s.db"));
    CampaignRecord r = sample_record();
    r.fallback_chain = true;
    r.max_hours = 336.5;
    store.add_campaign(r);
    id = r.spec.id;
    r.segments[1].seg.attempts = 1;
    r.segments[1].held_behind = 812;
    store.begin_submission(id, r.segments[1], {store.store_id(), id, 1, 1}, "fallback chain");
    r.segments[1].released_at = 1'700'000'000;
    store.record_release(id, r.segments[1], "forecast: go");
  }
  CampaignStore store(dir.file("s.db"));
  const CampaignRecord r = store.load_campaigns().at(0);
  EXPECT_TRUE(r.fallback_chain);
  EXPECT_EQ(r.max_hours, 336.5);
  EXPECT_EQ(r.segments.at(1).held_behind, 812);
  EXPECT_EQ(r.segments.at(1).released_at, 1'700'000'000);
  EXPECT_EQ(store.submissions(id).at(0).reason, "fallback chain; released: forecast: go");
}

TEST(CampaignStore, AnUnfinishedIntentIsRemembered) {
  TempDir dir;
  std::int64_t id = 0;
  {
    CampaignStore store(dir.file("s.db"));
    CampaignRecord r = sample_record();
    store.add_campaign(r);
    id = r.spec.id;
    r.segments[1].seg.attempts = 2;
    r.segments[1].submitting = true;
    r.segments[1].intent_time = 500;
    store.begin_submission(id, r.segments[1], {store.store_id(), id, 1, 2}, "again");
  }
  CampaignStore store(dir.file("s.db"));
  const auto all = store.load_campaigns();
  EXPECT_TRUE(all[0].segments[1].submitting);
  EXPECT_EQ(all[0].segments[1].seg.attempts, 2);
  EXPECT_EQ(store.submissions(id).at(0).state, "submitting");
}

TEST(CampaignStore, SnapshotsRoundTripAndPrune) {
  TempDir dir;
  CampaignStore store(dir.file("s.db"));
  for (Seconds t = 600; t <= 3000; t += 600) {
    QueueSnapshot q;
    q.time = t;
    q.total_nodes = 4;
    q.gpus_per_node = 4;
    q.recent_mean_wait_s = 12.5;
    q.recent_starts = 7;
    q.recent_runtime_shares = {0.25f, 1.f};
    for (int i = 0; i < 100; ++i) q.pending.push_back({3600, 1 + i % 3, 4, t - i});
    q.running.push_back({7200, 2, 4, 30, 60});
    store.save_snapshot(q);
  }
  store.prune_snapshots(1800);
  const auto back = store.load_snapshots(0);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].time, 1800);
  EXPECT_EQ(back[0].pending.size(), 100u);
  EXPECT_EQ(back[0].pending[5].nodes, 3);
  EXPECT_EQ(back[0].pending[5].waited, 1795);
  EXPECT_EQ(back[0].running[0].run, 60);
  EXPECT_DOUBLE_EQ(back[0].recent_mean_wait_s, 12.5);
  EXPECT_EQ(back[0].recent_starts, 7);
  EXPECT_EQ(back[0].recent_runtime_shares, (std::vector<float>{0.25f, 1.f}));
}

TEST(CampaignStore, CorruptSnapshotBlobIsAnError) {
  std::vector<unsigned char> junk(40, 0x55);
  EXPECT_THROW(decode_snapshot_blob(junk), std::runtime_error);
  QueueSnapshot q;
  q.pending.push_back({1, 1, 1, 1});
  auto blob = encode_snapshot_blob(q);
  blob.resize(blob.size() - 3);
  EXPECT_THROW(decode_snapshot_blob(blob), std::runtime_error);
}

TEST(CampaignStore, ObservedJobsKeepTheLatestState) {
  TempDir dir;
  CampaignStore store(dir.file("s.db"));
  SlurmJob j;
  j.id = 5;
  j.partition = "gpu";
  j.submit = 10;
  j.time_limit = 600;
  store.upsert_observed_jobs({j});
  EXPECT_TRUE(store.finished_observed_jobs().empty());
  j.state = SlurmJobState::kCompleted;
  j.start = 20;
  j.end = 80;
  store.upsert_observed_jobs({j});
  const auto done = store.finished_observed_jobs();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].end, 80);
  EXPECT_EQ(done[0].state, SlurmJobState::kCompleted);
  EXPECT_EQ(store.observed_job_count(), 1u);
}

TEST(CampaignStore, UsesWriteAheadLogging) {
  TempDir dir;
  CampaignStore store(dir.file("s.db"));
  store.set_value("k", "v");
  EXPECT_EQ(store.value("k"), "v");
  EXPECT_TRUE(std::filesystem::exists(dir.file("s.db-wal")));
}

std::string open_error(const std::string& path) {
  try {
    CampaignStore store(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// SQLite said only "unable to open database file (in: PRAGMA journal_mode=WAL)".
TEST(CampaignStore, OpenErrorsNameTheStoreAndTheReason) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/s.db");
  std::string e = open_error(missing);
  EXPECT_NE(e.find(missing), std::string::npos) << e;
  EXPECT_NE(e.find("No such file or directory"), std::string::npos) << e;
  std::filesystem::create_directory(dir.path() / "d.db");
  e = open_error(dir.file("d.db"));
  EXPECT_NE(e.find(dir.file("d.db")), std::string::npos) << e;
  EXPECT_NE(e.find("directory"), std::string::npos) << e;
}

TEST(CampaignStore, ReadOnlyStoreSaysWhatIsNotWritable) {
  TempDir dir;
  { CampaignStore store(dir.file("s.db")); }
  std::filesystem::remove(dir.file("s.db-wal"));
  std::filesystem::remove(dir.file("s.db-shm"));
  const std::string e = testing::as_unprivileged_user({dir.path()}, [&] {
    ::chmod(dir.path().c_str(), 0500);
    std::string why = open_error(dir.file("s.db"));
    ::chmod(dir.path().c_str(), 0700);
    return why;
  });
  EXPECT_NE(e.find(dir.file("s.db")), std::string::npos) << e;
  EXPECT_NE(e.find("not writable"), std::string::npos) << e;
}

}  // namespace
}  // namespace mirage::daemon
