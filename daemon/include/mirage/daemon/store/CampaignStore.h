#pragma once
// Everything the daemon must not forget, in one SQLite file (WAL mode, synchronous=FULL):
// campaigns and their segments, the submission intents (recorded before every submission), the
// policy's decisions, the snapshot history the encoder needs, the recent-start waits, and the
// jobs observed on the cluster (for `mirage trace export`).
#include <memory>
#include <string>
#include <vector>

#include "mirage/core/QueueSnapshot.h"
#include "mirage/daemon/slurm/SlurmClient.h"
#include "mirage/daemon/store/CampaignRecord.h"

namespace mirage::daemon {

// The store's value (CampaignStore::value) that holds the partition the daemon last saw: its
// size, priority weights, unavailable nodes and user limits (JSON, written by CampaignPass).
inline constexpr const char* kMachineKey = "machine";

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

class CampaignStore {
 public:
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
  void refuse_submission(std::int64_t campaign, const SegmentRecord& segment,
                         const std::string& why);
  // How the job of the segment's current attempt ended.
  void record_outcome(std::int64_t campaign, const SegmentRecord& segment,
                      const std::string& outcome);
  // A successor held behind its predecessor was released early: why joins its reason.
  void record_release(std::int64_t campaign, const SegmentRecord& segment, const std::string& why);
  std::vector<SubmissionRecord> submissions(std::int64_t campaign) const;

  // --- decisions
  void log_decision(const DecisionRecord& decision);
  std::vector<DecisionRecord> decisions(std::int64_t campaign, std::size_t limit) const;

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

  std::string path_;
  std::string store_id_;
  std::unique_ptr<sql::Database> db_;
};

}  // namespace mirage::daemon
