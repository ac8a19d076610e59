#pragma once
// Everything the daemon must not forget, in one SQLite file (WAL mode, synchronous=FULL):
// campaigns and their segments, the submission intents (recorded before every submission), the
// policy's decisions, the snapshot history the encoder needs, the recent-start waits, and the
// jobs observed on the cluster (for `mirage trace export`), and the waits predicted for the
// submitted jobs beside the waits they got.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/QueueSnapshot.h"
#include "mirage/daemon/slurm/SlurmClient.h"
#include "mirage/daemon/store/CampaignRecord.h"

namespace mirage::daemon {

// The store's value (CampaignStore::value) that holds the partition the daemon last saw: its
// size, priority weights, unavailable nodes and user limits (JSON, written by CampaignPass).
inline constexpr const char* kMachineKey = "machine";
// The store's value that says why the campaign's latest submission could not be checked for an
// earlier run the store did not know (empty: it was), for `campaign show`.
inline std::string rerun_check_key(std::int64_t campaign) {
  return "rerun_check:" + std::to_string(campaign);
}

namespace sql {
class Database;
}

// One row of the intent log: a submission the daemon decided to make.
struct SubmissionRecord {
  std::int64_t campaign = 0;
  int segment = 0;
  int attempt = 0;
  std::string tag;
  std::string state;  // submitting, submitted, refused
  JobId job = 0;
  Seconds intent_time = 0;
  std::string message;  // why Slurm refused it
  std::string outcome;  // how its job ended ("COMPLETED", "FAILED, exit code 1"); empty until then
  std::string reason;   // why it was made, in words ("first segment", the policy's reason)
  // A second job of the attempt's tag, cancelled because `job` started first (0: none).
  JobId twin = 0;
};

struct DecisionRecord {
  std::int64_t campaign = 0;
  int segment = 0;
  Seconds time = 0;
  std::string action;  // wait, submit, fallback, too-early
  std::string policy;
  double confidence = 1;
  // When the segment, submitted at `time`, would start: by mirage's forecast of the queue, and by
  // Slurm's will-run test (the latest, asked at the previous decision); kUnknownTime where there
  // is none, and then `slurm_note` says why (the controller did not answer, ...).
  Seconds forecast_start = kUnknownTime;
  Seconds slurm_start = kUnknownTime;
  std::string slurm_note = {};
};

// One submitted job's wait as the wait predictor ([policy] wait_distribution) saw it when the
// job entered the queue (its submission, or its release from behind its predecessor), and the
// wait it got once it started.
struct WaitPredictionRecord {
  std::int64_t campaign = 0;
  int segment = 0;
  int attempt = 0;
  int nodes = 1;                 // the campaign's (read back; not written): its size class
  Seconds queued_at = 0;         // when its wait began
  std::string predictor;         // the file
  std::string predictor_digest;  // of the file's bytes: a refit is another predictor
  WaitQuantiles model{};         // the predictor's own quantiles
  WaitQuantiles stated{};        // as recalibrated on the user's earlier jobs: what the policy read
  Seconds started = kUnknownTime;
  Seconds wait = kUnknownTime;  // started - queued_at; kUnknownTime until it starts
};

// The files SQLite keeps beside a database file (write-ahead log, its shared memory, a rollback
// journal): named by the database's path and one of these.
inline constexpr const char* kSqliteCompanionSuffixes[] = {"-wal", "-shm", "-journal"};

class CampaignStore {
 public:
  // Where a store at `path` is made before it is renamed into place whole.
  static std::string staging_path(const std::string& path) { return path + ".new"; }

  // Opens (creating if needed) the store at `path`; ":memory:" for a throwaway one. Refuses a
  // file that is not a mirage store: an empty one, or another program's SQLite database.
  explicit CampaignStore(const std::string& path);
  ~CampaignStore();
  CampaignStore(const CampaignStore&) = delete;
  CampaignStore& operator=(const CampaignStore&) = delete;

  const std::string& path() const { return path_; }
  // A random identity made when the store is created; part of every job tag.
  const std::string& store_id() const { return store_id_; }

  // Groups the writes of one tick into one transaction (nestable; the outermost commits).
  class Batch {
   public:
    explicit Batch(CampaignStore& store);
    ~Batch();
    void commit();

   private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };

  // --- campaigns
  // Inserts the campaign and its planned segments; sets record.spec.id.
  void add_campaign(CampaignRecord& record);
  std::vector<CampaignRecord> load_campaigns() const;
  // New campaigns get ids above `id`: a store that lost campaigns must not give a new one the id
  // (and so the job tags) of a lost one whose jobs are still in the queue.
  void reserve_campaign_ids(std::int64_t id);
  void save_campaign_state(const CampaignRecord& record);
  // The segments' shape (nodes, GPUs, limit, partition) and whether Slurm granted it.
  void save_campaign_shape(const CampaignRecord& record);
  void save_done_file(const CampaignRecord& record);
  void save_segment(std::int64_t campaign, const SegmentRecord& segment);

  // --- the intent log. begin_submission commits the intent (and the segment with it) before
  // the caller may submit; finish/refuse record the outcome.
  // `reason` says why, in words; a second intent for the same attempt keeps the first one's.
  void begin_submission(std::int64_t campaign, const SegmentRecord& segment, const JobTag& tag,
                        const std::string& reason);
  void finish_submission(std::int64_t campaign, const SegmentRecord& segment, JobId job);
  // The attempt's job is now the segment's (a twin of its tag that started first); `cancelled`,
  // the one it had, stays known as its twin.
  void follow_twin(std::int64_t campaign, const SegmentRecord& segment, JobId cancelled);
  // The intent of `attempt` taken back: Slurm refused it for now and made no job, so the
  // attempt's number (and tag) is used again by the next submission. Its wait prediction goes
  // with it: the job's wait runs from the submission Slurm takes, predicted then.
  void withdraw_submission(std::int64_t campaign, const SegmentRecord& segment, int attempt);
  void refuse_submission(std::int64_t campaign, const SegmentRecord& segment,
                         const std::string& why);
  // How the job of the segment's current attempt ended.
  void record_outcome(std::int64_t campaign, const SegmentRecord& segment,
                      const std::string& outcome);
  // What became of the segment's current attempt joins its reason ("; " and `note`).
  void note_submission(std::int64_t campaign, const SegmentRecord& segment,
                       const std::string& note);
  // A successor held behind its predecessor was released early: why joins its reason.
  void record_release(std::int64_t campaign, const SegmentRecord& segment, const std::string& why);
  std::vector<SubmissionRecord> submissions(std::int64_t campaign) const;

  // --- decisions
  void log_decision(const DecisionRecord& decision);
  std::vector<DecisionRecord> decisions(std::int64_t campaign, std::size_t limit) const;

  // --- the waits predicted at submission and got (one row per submitted job)
  // The first record of a job stands (a submission sent again keeps what was said first).
  void record_wait_prediction(const WaitPredictionRecord& r);
  // The job of (campaign, segment, attempt) started at `start`: its record with the wait it
  // got, or nullopt when none was predicted for it (or its start is already recorded).
  std::optional<WaitPredictionRecord> record_wait_start(std::int64_t campaign, int segment,
                                                        int attempt, Seconds start);
  // The latest `limit` jobs that started (of `campaign`, or all), oldest first; of one
  // predictor when `digest` is given.
  std::vector<WaitPredictionRecord> started_waits(std::optional<std::int64_t> campaign,
                                                  std::size_t limit,
                                                  const std::string& digest = {}) const;
  // How many jobs have a predicted wait (of `campaign`, or all), started or not.
  std::size_t predicted_waits(std::optional<std::int64_t> campaign) const;

  // --- snapshot history (for the encoder's window) and recent starts
  void save_snapshot(const QueueSnapshot& snapshot);
  // Snapshots with time >= since, oldest first.
  std::vector<QueueSnapshot> load_snapshots(Seconds since) const;
  void prune_snapshots(Seconds before);
  void set_value(const std::string& key, const std::string& value);
  std::string value(const std::string& key) const;  // empty when unset

  // --- jobs seen on the cluster, for trace export
  void upsert_observed_jobs(const std::vector<SlurmJob>& jobs);
  // Jobs that started and ended, by submit time.
  std::vector<SlurmJob> finished_observed_jobs() const;
  std::size_t observed_job_count() const;

 private:
  // Makes a new store at `path`: whole under a staging name, then renamed into place.
  void create(const std::string& path);
  // The schema (migrating from `version`) and the store's identity, in one transaction.
  void initialise(std::int64_t version);
  // UPDATE submissions SET `set` (one ? for `text`) for the segment's current attempt.
  void update_attempt(const char* set, const std::string& text, std::int64_t campaign,
                      const SegmentRecord& segment);
  // UPDATE submissions SET `set` (two ? for `a` and `b`) for the segment's current attempt, and
  // the segment saved with it, in one transaction.
  void record_attempt_jobs(const char* set, std::int64_t a, std::int64_t b, std::int64_t campaign,
                           const SegmentRecord& segment);

  std::string path_;
  std::string store_id_;
  std::unique_ptr<sql::Database> db_;
};

}  // namespace mirage::daemon
