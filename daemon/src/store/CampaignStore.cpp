#include "mirage/daemon/store/CampaignStore.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "mirage/daemon/slurm/SegmentShape.h"
#include "mirage/daemon/store/SnapshotBlob.h"
#include "store/PathChecks.h"
#include "store/Sqlite.h"

namespace mirage::daemon {

std::string_view to_string(CampaignState state) {
  switch (state) {
    case CampaignState::kActive: return "active";
    case CampaignState::kPaused: return "paused";
    case CampaignState::kDone: return "done";
    case CampaignState::kFailed: return "failed";
    case CampaignState::kCancelled: return "cancelled";
  }
  return "?";
}

std::optional<CampaignState> parse_campaign_state(std::string_view text) {
  for (auto s : {CampaignState::kActive, CampaignState::kPaused, CampaignState::kDone,
                 CampaignState::kFailed, CampaignState::kCancelled})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

int CampaignRecord::segments_done() const {
  int n = 0;
  for (const auto& s : segments) n += s.seg.state == SegmentState::kDone;
  return n;
}

namespace {

// 1: the first; 2: shapes from the script (sbatch options, QOS, shape granted), open-ended
// campaigns (done file), retries per campaign, each attempt's reason and outcome; 3: the fallback
// chain (a successor held behind its predecessor, released early) and the --max-hours cap; 4:
// each decision's expected starts (mirage's forecast, Slurm's estimate); 5: a segment whose job
// left the queue unseen (lost_at) and its output file, and the request key of `campaign add`; 6:
// the waits predicted for submitted jobs and got (a new table: kSchema adds it to earlier stores);
// 7: whether a campaign's job names carry the store id; 8: an attempt's second job, cancelled
// when its first one started (twin_job); 9: when Slurm took a hand-off's signal and cancel.
constexpr int kSchemaVersion = 10;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS campaigns(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL, owner_uid INTEGER NOT NULL,
  script TEXT NOT NULL, script_path TEXT NOT NULL DEFAULT '',
  partition TEXT NOT NULL DEFAULT '', account TEXT NOT NULL DEFAULT '',
  policy TEXT NOT NULL, segment_count INTEGER NOT NULL, nodes INTEGER NOT NULL,
  gpus_per_node INTEGER NOT NULL, time_limit INTEGER NOT NULL, overlap TEXT NOT NULL,
  handoff_grace INTEGER NOT NULL, work_dir TEXT NOT NULL DEFAULT '',
  environment TEXT NOT NULL DEFAULT '[]',
  state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  created INTEGER NOT NULL, finished INTEGER NOT NULL DEFAULT -1,
  qos TEXT NOT NULL DEFAULT '', sbatch_options TEXT NOT NULL DEFAULT '[]',
  max_retries INTEGER NOT NULL DEFAULT -1, done_file TEXT NOT NULL DEFAULT '',
  shape_granted INTEGER NOT NULL DEFAULT 0,
  fallback_chain INTEGER NOT NULL DEFAULT 0, max_hours REAL NOT NULL DEFAULT 0,
  request_key TEXT NOT NULL DEFAULT '', job_names_carry_store INTEGER NOT NULL DEFAULT 1,
  sbatch_ignores_pbs INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS segments(
  campaign_id INTEGER NOT NULL REFERENCES campaigns(id), idx INTEGER NOT NULL,
  state TEXT NOT NULL, job_id INTEGER NOT NULL DEFAULT 0,
  submit_time INTEGER NOT NULL DEFAULT -1, start_time INTEGER NOT NULL DEFAULT -1,
  end_time INTEGER NOT NULL DEFAULT -1, attempts INTEGER NOT NULL DEFAULT 0,
  submitting INTEGER NOT NULL DEFAULT 0, intent_time INTEGER NOT NULL DEFAULT -1,
  signalled_at INTEGER NOT NULL DEFAULT -1, killed_at INTEGER NOT NULL DEFAULT -1,
  message TEXT NOT NULL DEFAULT '',
  held_behind INTEGER NOT NULL DEFAULT 0, released_at INTEGER NOT NULL DEFAULT -1,
  lost_at INTEGER NOT NULL DEFAULT -1, output_file TEXT NOT NULL DEFAULT '',
  adopted_tag TEXT NOT NULL DEFAULT '',
  signal_sent_at INTEGER NOT NULL DEFAULT -1, cancel_sent_at INTEGER NOT NULL DEFAULT -1,
  PRIMARY KEY(campaign_id, idx));
CREATE TABLE IF NOT EXISTS submissions(
  campaign_id INTEGER NOT NULL, idx INTEGER NOT NULL, attempt INTEGER NOT NULL,
  tag TEXT NOT NULL UNIQUE, state TEXT NOT NULL, job_id INTEGER NOT NULL DEFAULT 0,
  intent_time INTEGER NOT NULL, result_time INTEGER NOT NULL DEFAULT -1,
  message TEXT NOT NULL DEFAULT '', outcome TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '', twin_job INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(campaign_id, idx, attempt));
CREATE TABLE IF NOT EXISTS decisions(
  id INTEGER PRIMARY KEY AUTOINCREMENT, campaign_id INTEGER NOT NULL, idx INTEGER NOT NULL,
  time INTEGER NOT NULL, action TEXT NOT NULL, policy TEXT NOT NULL, confidence REAL NOT NULL,
  forecast_start INTEGER NOT NULL DEFAULT -1, slurm_start INTEGER NOT NULL DEFAULT -1,
  slurm_note TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS decisions_by_campaign ON decisions(campaign_id, id);
CREATE INDEX IF NOT EXISTS campaigns_by_request_key ON campaigns(request_key);
CREATE TABLE IF NOT EXISTS wait_predictions(
  campaign_id INTEGER NOT NULL, idx INTEGER NOT NULL, attempt INTEGER NOT NULL,
  queued_at INTEGER NOT NULL, predictor TEXT NOT NULL, predictor_digest TEXT NOT NULL,
  model TEXT NOT NULL, stated TEXT NOT NULL,
  started INTEGER NOT NULL DEFAULT -1, wait INTEGER NOT NULL DEFAULT -1,
  PRIMARY KEY(campaign_id, idx, attempt));
CREATE INDEX IF NOT EXISTS wait_predictions_by_start ON wait_predictions(started);
CREATE TABLE IF NOT EXISTS snapshots(time INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS observed_jobs(
  job_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, partition TEXT NOT NULL,
  state TEXT NOT NULL, submit INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
  time_limit INTEGER NOT NULL, nodes INTEGER NOT NULL, gpus_per_node INTEGER NOT NULL);
)sql";

// The columns each schema added, with the value the rows already there take. Some came to a
// schema after stores of it were written (submissions.reason to 2, segments.adopted_tag to 5),
// so a store's version does not say which it has: each missing one is added at every open.
struct AddedColumn {
  int schema;
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kAddedColumns[] = {
    {2, "campaigns", "qos", "TEXT NOT NULL DEFAULT ''"},
    {2, "campaigns", "sbatch_options", "TEXT NOT NULL DEFAULT '[]'"},
    {2, "campaigns", "max_retries", "INTEGER NOT NULL DEFAULT -1"},
    {2, "campaigns", "done_file", "TEXT NOT NULL DEFAULT ''"},
    {2, "campaigns", "shape_granted", "INTEGER NOT NULL DEFAULT 0"},
    {2, "submissions", "outcome", "TEXT NOT NULL DEFAULT ''"},
    {2, "submissions", "reason", "TEXT NOT NULL DEFAULT ''"},
    // Campaigns added before the fallback chain keep running without one.
    {3, "campaigns", "fallback_chain", "INTEGER NOT NULL DEFAULT 0"},
    {3, "campaigns", "max_hours", "REAL NOT NULL DEFAULT 0"},
    {3, "segments", "held_behind", "INTEGER NOT NULL DEFAULT 0"},
    {3, "segments", "released_at", "INTEGER NOT NULL DEFAULT -1"},
    // Decisions made before the expected starts were recorded have none.
    {4, "decisions", "forecast_start", "INTEGER NOT NULL DEFAULT -1"},
    {4, "decisions", "slurm_start", "INTEGER NOT NULL DEFAULT -1"},
    {4, "decisions", "slurm_note", "TEXT NOT NULL DEFAULT ''"},
    // Nothing was lost before; earlier campaigns have no request key.
    {5, "campaigns", "request_key", "TEXT NOT NULL DEFAULT ''"},
    {5, "segments", "lost_at", "INTEGER NOT NULL DEFAULT -1"},
    {5, "segments", "output_file", "TEXT NOT NULL DEFAULT ''"},
    {5, "segments", "adopted_tag", "TEXT NOT NULL DEFAULT ''"},
    // The campaigns already in the store keep the job names they were submitted under (NAME-sK),
    // so that their jobs in flight are found by them until they end.
    {7, "campaigns", "job_names_carry_store", "INTEGER NOT NULL DEFAULT 0"},
    // No attempt had a twin recorded.
    {8, "submissions", "twin_job", "INTEGER NOT NULL DEFAULT 0"},
    // A hand-off signal or cancel committed before is not known to have been taken: it is sent
    // again while its predecessor runs (harmless to repeat).
    {9, "segments", "signal_sent_at", "INTEGER NOT NULL DEFAULT -1"},
    {9, "segments", "cancel_sent_at", "INTEGER NOT NULL DEFAULT -1"},
    // The campaigns already in the store keep the #PBS and #BSUB lines sbatch applied to their
    // segments so far: a limit or account of a ported script's would change in mid-run.
    {10, "campaigns", "sbatch_ignores_pbs", "INTEGER NOT NULL DEFAULT 0"},
};

std::set<std::string> column_names(sql::Database& db, const std::string& table) {
  auto info = db.prepare("PRAGMA table_info(" + table + ")");
  std::set<std::string> names;
  while (info.step()) names.insert(info.text(1));
  return names;
}

// Adds each column of kAddedColumns a store of schema 1 or later lacks.
void add_missing_columns(sql::Database& db) {
  std::map<std::string, std::set<std::string>> present;
  for (const AddedColumn& c : kAddedColumns) {
    auto it = present.find(c.table);
    if (it == present.end()) it = present.emplace(c.table, column_names(db, c.table)).first;
    if (it->second.count(c.column)) continue;
    db.exec(std::string("ALTER TABLE ") + c.table + " ADD COLUMN " + c.column + " " + c.definition);
    it->second.insert(c.column);
  }
}

// Schema 1 -> 2. Campaigns of schema 1 were submitted with every shape flag (all required then)
// and nothing from the script: their flags become sbatch options, so they keep that shape.
void migrate_from_1(sql::Database& db) {
  auto read =
      db.prepare("SELECT id, nodes, gpus_per_node, time_limit, partition, account FROM campaigns");
  auto write = db.prepare("UPDATE campaigns SET sbatch_options=? WHERE id=?");
  while (read.step()) {
    const auto options = options_of_earlier_campaign(static_cast<int>(read.integer(1)),
                                                     static_cast<int>(read.integer(2)),
                                                     read.integer(3), read.text(4), read.text(5));
    write.bind(1, nlohmann::json(options).dump()).bind(2, read.integer(0));
    write.run();
  }
}

SegmentState parse_segment_state(const std::string& s) {
  for (auto v : {SegmentState::kPlanned, SegmentState::kPending, SegmentState::kRunning,
                 SegmentState::kDone, SegmentState::kFailed})
    if (to_string(v) == s) return v;
  throw sql::StoreError("the store holds an unknown segment state '" + s + "'");
}

}  // namespace

namespace {

// Sets up a connection: WAL with full syncs, and a checkpoint after every commit, so that the
// main file holds every committed campaign and losing the -wal file loses at most the last one.
// The store is one process's at a time (StoreLock), so it is locked for the connection's life:
// SQLite then keeps the WAL index in its own memory, not in a -shm file mapped into the process,
// which a file made read-only or immutable under it turns into SIGBUS.
void configure(sql::Database& db) {
  db.exec("PRAGMA locking_mode=EXCLUSIVE");
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=FULL");
  db.exec("PRAGMA wal_autocheckpoint=1");
  db.exec("PRAGMA foreign_keys=ON");
}

std::int64_t user_version(sql::Database& db) {
  auto v = db.prepare("PRAGMA user_version");
  v.step();
  return v.integer(0);
}

// The tables of a database mirage did not make, for the message that refuses it.
std::string table_names(sql::Database& db) {
  auto t = db.prepare(
      "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
      "ORDER BY name LIMIT 6");
  std::string out;
  for (int n = 0; t.step(); ++n) {
    if (n > 0) out += ", ";
    out += n < 5 ? t.text(0) : std::string("...");
  }
  return out;
}

// The user_version in an SQLite file's header (offset 60, big-endian), read without opening it:
// what decides that a file is not a store must not change it first. nullopt: no SQLite header.
std::optional<std::uint32_t> header_user_version(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char h[100] = {};
  f.read(reinterpret_cast<char*>(h), sizeof h);
  if (f.gcount() != sizeof h || std::memcmp(h, "SQLite format 3", 16) != 0) return std::nullopt;
  return (std::uint32_t{h[60]} << 24) | (std::uint32_t{h[61]} << 16) | (std::uint32_t{h[62]} << 8) |
         std::uint32_t{h[63]};
}

}  // namespace

CampaignStore::CampaignStore(const std::string& path) : path_(path) {
  const bool memory = path == ":memory:";
  std::error_code ec;
  const bool exists = !memory && std::filesystem::exists(path, ec);
  // A store is made whole under another name and then renamed into place, so a file of the
  // store's name is never a half-made or empty store: one that is empty is not ours.
  if (exists && std::filesystem::is_regular_file(path, ec) &&
      std::filesystem::file_size(path, ec) == 0)
    throw sql::StoreError("the store " + path +
                          " is an empty file, not a mirage store (a store is never empty; move it "
                          "aside, or name another store.path, to start a new one)");
  if (!memory && !exists) create(path);
  // Another program's database (no mirage schema in its header, and no -wal that could hold one)
  // is refused before SQLite is asked to open it: opening switches it to WAL mode.
  if (exists && !std::filesystem::exists(path + "-wal", ec))
    if (const auto v = header_user_version(path); v && *v == 0)
      throw sql::StoreError("the store " + path +
                            " is an SQLite database mirage did not make; refusing to add mirage's "
                            "tables to it: name another store.path");
  std::int64_t version = 0;
  try {  // SQLite opens lazily: a file it cannot use fails on the first statement
    db_ = std::make_unique<sql::Database>(path);
    configure(*db_);
    version = user_version(*db_);
  } catch (const sql::StoreError& e) {
    // SQLite's "unable to open database file" says neither which file nor why.
    const auto why = memory ? std::nullopt : store_problem(path);
    throw sql::StoreError("cannot open the store " + path + ": " + why.value_or(e.what()));
  }
  if (version > kSchemaVersion)
    throw sql::StoreError("the store " + path + " was written by a newer mirage (schema " +
                          std::to_string(version) + ", this one knows " +
                          std::to_string(kSchemaVersion) + ")");
  if (version == 0 && !memory) {
    const std::string tables = table_names(*db_);
    throw sql::StoreError("the store " + path + " is an SQLite database mirage did not make (" +
                          (tables.empty() ? std::string("no tables") : "tables: " + tables) +
                          "); refusing to add mirage's tables to it: name another store.path");
  }
  initialise(version);
}

void CampaignStore::create(const std::string& path) {
  const std::string staging = staging_path(path);
  std::filesystem::remove(staging);
  for (const char* suffix : kSqliteCompanionSuffixes) std::filesystem::remove(staging + suffix);
  try {
    db_ = std::make_unique<sql::Database>(staging);
    configure(*db_);
    initialise(0);
    db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db_.reset();
  } catch (const sql::StoreError& e) {
    db_.reset();
    std::filesystem::remove(staging);
    const auto why = store_problem(path);
    throw sql::StoreError("cannot create the store " + path + ": " + why.value_or(e.what()));
  }
  std::error_code ec;
  std::filesystem::rename(staging, path, ec);
  if (ec)
    throw sql::StoreError("cannot create the store " + path + ": renaming " + staging + ": " +
                          ec.message());
}

void CampaignStore::initialise(std::int64_t version) {
  sql::Transaction t(*db_);
  // Whatever the version says (a fresh store gets them all from kSchema).
  if (version >= 1) add_missing_columns(*db_);
  if (version == 1) migrate_from_1(*db_);
  db_->exec(kSchema);
  db_->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
  store_id_ = value("store_id");
  if (store_id_.empty()) {
    std::random_device rd;
    char id[9];
    std::snprintf(id, sizeof id, "%08x", static_cast<unsigned>(rd()));
    store_id_ = id;
    set_value("store_id", store_id_);
  }
  t.commit();
}

CampaignStore::~CampaignStore() = default;

struct CampaignStore::Batch::Impl {
  explicit Impl(sql::Database& db) : t(db) {}
  sql::Transaction t;
};
CampaignStore::Batch::Batch(CampaignStore& store) : impl_(std::make_unique<Impl>(*store.db_)) {}
CampaignStore::Batch::~Batch() = default;
void CampaignStore::Batch::commit() {
  impl_->t.commit();
}

void CampaignStore::add_campaign(CampaignRecord& r) {
  sql::Transaction t(*db_);
  auto s = db_->prepare(
      "INSERT INTO campaigns(name, owner_uid, script, script_path, partition, account, policy, "
      "segment_count, nodes, gpus_per_node, time_limit, overlap, handoff_grace, work_dir, "
      "environment, state, message, created, finished, qos, sbatch_options, max_retries, "
      "done_file, shape_granted, fallback_chain, max_hours, request_key, job_names_carry_store, "
      "sbatch_ignores_pbs) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const Campaign& c = r.spec;
  s.bind(1, c.name)
      .bind(2, static_cast<std::int64_t>(r.owner_uid))
      .bind(3, c.script)
      .bind(4, r.script_path)
      .bind(5, c.partition)
      .bind(6, r.account)
      .bind(7, c.policy)
      .bind(8, c.segment_count)
      .bind(9, c.nodes)
      .bind(10, c.gpus_per_node)
      .bind(11, c.time_limit)
      .bind(12, to_string(c.overlap))
      .bind(13, c.handoff_grace)
      .bind(14, r.work_dir)
      .bind(15, nlohmann::json(r.environment).dump())
      .bind(16, to_string(r.state))
      .bind(17, r.message)
      .bind(18, r.created)
      .bind(19, r.finished)
      .bind(20, r.qos)
      .bind(21, nlohmann::json(r.sbatch_options).dump())
      .bind(22, r.max_retries)
      .bind(23, r.done_file)
      .bind(24, r.shape_granted ? 1 : 0)
      .bind(25, r.fallback_chain ? 1 : 0)
      .bind(26, r.max_hours)
      .bind(27, r.request_key)
      .bind(28, r.job_names_carry_store ? 1 : 0)
      .bind(29, r.sbatch_ignores_pbs ? 1 : 0);
  s.run();
  r.spec.id = db_->last_insert_id();
  // Every segment of a bounded campaign is planned at once; an open-ended one starts with one.
  const int planned = std::max(1, c.segment_count);
  if (static_cast<int>(r.segments.size()) != planned) {
    r.segments.assign(static_cast<std::size_t>(planned), SegmentRecord{});
    for (int i = 0; i < planned; ++i) r.segments[static_cast<std::size_t>(i)].seg.index = i;
  }
  for (const auto& seg : r.segments) save_segment(r.spec.id, seg);
  t.commit();
}

std::vector<CampaignRecord> CampaignStore::load_campaigns() const {
  std::vector<CampaignRecord> out;
  auto s = db_->prepare(
      "SELECT id, name, owner_uid, script, script_path, partition, account, policy, "
      "segment_count, nodes, gpus_per_node, time_limit, overlap, handoff_grace, work_dir, "
      "environment, state, message, created, finished, qos, sbatch_options, max_retries, "
      "done_file, shape_granted, fallback_chain, max_hours, request_key, job_names_carry_store, "
      "sbatch_ignores_pbs FROM campaigns ORDER BY id");
  while (s.step()) {
    CampaignRecord r;
    Campaign& c = r.spec;
    c.id = s.integer(0);
    c.name = s.text(1);
    r.owner_uid = static_cast<std::uint32_t>(s.integer(2));
    c.script = s.text(3);
    r.script_path = s.text(4);
    c.partition = s.text(5);
    r.account = s.text(6);
    c.policy = s.text(7);
    c.segment_count = static_cast<int>(s.integer(8));
    c.nodes = static_cast<int>(s.integer(9));
    c.gpus_per_node = static_cast<int>(s.integer(10));
    c.time_limit = s.integer(11);
    c.overlap = parse_overlap_mode(s.text(12)).value_or(OverlapMode::kConcurrent);
    c.handoff_grace = s.integer(13);
    r.work_dir = s.text(14);
    r.environment = nlohmann::json::parse(s.text(15)).get<std::vector<std::string>>();
    const std::string state = s.text(16);
    const auto st = parse_campaign_state(state);
    if (!st) throw sql::StoreError("the store holds an unknown campaign state '" + state + "'");
    r.state = *st;
    r.message = s.text(17);
    r.created = s.integer(18);
    r.finished = s.integer(19);
    r.qos = s.text(20);
    r.sbatch_options = nlohmann::json::parse(s.text(21)).get<std::vector<std::string>>();
    r.max_retries = static_cast<int>(s.integer(22));
    r.done_file = s.text(23);
    r.shape_granted = s.integer(24) != 0;
    r.fallback_chain = s.integer(25) != 0;
    r.max_hours = s.real(26);
    r.request_key = s.text(27);
    r.job_names_carry_store = s.integer(28) != 0;
    r.sbatch_ignores_pbs = s.integer(29) != 0;
    out.push_back(std::move(r));
  }
  auto g = db_->prepare(
      "SELECT campaign_id, idx, state, job_id, submit_time, start_time, end_time, attempts, "
      "submitting, intent_time, signalled_at, killed_at, message, held_behind, released_at, "
      "lost_at, output_file, adopted_tag, signal_sent_at, cancel_sent_at FROM segments "
      "ORDER BY campaign_id, idx");
  std::size_t at = 0;
  while (g.step()) {
    const std::int64_t cid = g.integer(0);
    while (at < out.size() && out[at].spec.id < cid) ++at;
    if (at == out.size() || out[at].spec.id != cid) continue;
    // An open-ended campaign has as many segments as it has made so far.
    const auto idx = static_cast<std::size_t>(g.integer(1));
    auto& segments = out[at].segments;
    if (idx >= segments.size()) {
      const std::size_t from = segments.size();
      segments.resize(idx + 1);
      for (std::size_t i = from; i <= idx; ++i) segments[i].seg.index = static_cast<int>(i);
    }
    SegmentRecord& r = segments[idx];
    r.seg.state = parse_segment_state(g.text(2));
    r.seg.slurm_job_id = g.integer(3);
    r.seg.submit_time = g.integer(4);
    r.seg.start_time = g.integer(5);
    r.seg.end_time = g.integer(6);
    r.seg.attempts = static_cast<int>(g.integer(7));
    r.submitting = g.integer(8) != 0;
    r.intent_time = g.integer(9);
    r.signalled_at = g.integer(10);
    r.killed_at = g.integer(11);
    r.message = g.text(12);
    r.held_behind = g.integer(13);
    r.released_at = g.integer(14);
    r.lost_at = g.integer(15);
    r.output_file = g.text(16);
    r.adopted_tag = g.text(17);
    r.signal_sent_at = g.integer(18);
    r.cancel_sent_at = g.integer(19);
  }
  return out;
}

void CampaignStore::reserve_campaign_ids(std::int64_t id) {
  sql::Transaction t(*db_);
  std::int64_t seq = -1;
  {
    auto current = db_->prepare("SELECT seq FROM sqlite_sequence WHERE name='campaigns'");
    if (current.step()) seq = current.integer(0);
  }
  if (seq >= id) return;
  auto s = db_->prepare(seq < 0 ? "INSERT INTO sqlite_sequence(seq, name) VALUES(?, 'campaigns')"
                                : "UPDATE sqlite_sequence SET seq=? WHERE name='campaigns'");
  s.bind(1, id);
  s.run();
  t.commit();
}

void CampaignStore::save_campaign_state(const CampaignRecord& r) {
  auto s = db_->prepare("UPDATE campaigns SET state=?, message=?, finished=? WHERE id=?");
  s.bind(1, to_string(r.state)).bind(2, r.message).bind(3, r.finished).bind(4, r.spec.id);
  s.run();
}

void CampaignStore::save_campaign_shape(const CampaignRecord& r) {
  auto s = db_->prepare(
      "UPDATE campaigns SET nodes=?, gpus_per_node=?, time_limit=?, partition=?, "
      "shape_granted=? WHERE id=?");
  s.bind(1, r.spec.nodes)
      .bind(2, r.spec.gpus_per_node)
      .bind(3, r.spec.time_limit)
      .bind(4, r.spec.partition)
      .bind(5, r.shape_granted ? 1 : 0)
      .bind(6, r.spec.id);
  s.run();
}

void CampaignStore::save_done_file(const CampaignRecord& r) {
  auto s = db_->prepare("UPDATE campaigns SET done_file=? WHERE id=?");
  s.bind(1, r.done_file).bind(2, r.spec.id);
  s.run();
}

void CampaignStore::save_segment(std::int64_t campaign, const SegmentRecord& r) {
  auto s = db_->prepare(
      "INSERT INTO segments(campaign_id, idx, state, job_id, submit_time, start_time, end_time, "
      "attempts, submitting, intent_time, signalled_at, killed_at, message, held_behind, "
      "released_at, lost_at, output_file, adopted_tag, signal_sent_at, cancel_sent_at) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
      "ON CONFLICT(campaign_id, idx) DO UPDATE "
      "SET state=excluded.state, job_id=excluded.job_id, submit_time=excluded.submit_time, "
      "start_time=excluded.start_time, end_time=excluded.end_time, attempts=excluded.attempts, "
      "submitting=excluded.submitting, intent_time=excluded.intent_time, "
      "signalled_at=excluded.signalled_at, killed_at=excluded.killed_at, "
      "message=excluded.message, held_behind=excluded.held_behind, "
      "released_at=excluded.released_at, lost_at=excluded.lost_at, "
      "output_file=excluded.output_file, adopted_tag=excluded.adopted_tag, "
      "signal_sent_at=excluded.signal_sent_at, cancel_sent_at=excluded.cancel_sent_at");
  s.bind(1, campaign)
      .bind(2, r.seg.index)
      .bind(3, to_string(r.seg.state))
      .bind(4, r.seg.slurm_job_id)
      .bind(5, r.seg.submit_time)
      .bind(6, r.seg.start_time)
      .bind(7, r.seg.end_time)
      .bind(8, r.seg.attempts)
      .bind(9, r.submitting ? 1 : 0)
      .bind(10, r.intent_time)
      .bind(11, r.signalled_at)
      .bind(12, r.killed_at)
      .bind(13, r.message)
      .bind(14, r.held_behind)
      .bind(15, r.released_at)
      .bind(16, r.lost_at)
      .bind(17, r.output_file)
      .bind(18, r.adopted_tag)
      .bind(19, r.signal_sent_at)
      .bind(20, r.cancel_sent_at);
  s.run();
}

void CampaignStore::begin_submission(std::int64_t campaign, const SegmentRecord& segment,
                                     const JobTag& tag, const std::string& reason) {
  sql::Transaction t(*db_);
  auto s = db_->prepare(
      "INSERT INTO submissions(campaign_id, idx, attempt, tag, state, intent_time, reason) "
      "VALUES(?,?,?,?,'submitting',?,?) ON CONFLICT(campaign_id, idx, attempt) DO NOTHING");
  s.bind(1, campaign)
      .bind(2, segment.seg.index)
      .bind(3, segment.seg.attempts)
      .bind(4, tag.str())
      .bind(5, segment.intent_time)
      .bind(6, reason);
  s.run();
  save_segment(campaign, segment);
  t.commit();
}

void CampaignStore::record_attempt_jobs(const char* set, std::int64_t a, std::int64_t b,
                                        std::int64_t campaign, const SegmentRecord& segment) {
  sql::Transaction t(*db_);
  auto s = db_->prepare(std::string("UPDATE submissions SET ") + set +
                        " WHERE campaign_id=? AND idx=? AND attempt=?");
  s.bind(1, a)
      .bind(2, b)
      .bind(3, campaign)
      .bind(4, segment.seg.index)
      .bind(5, segment.seg.attempts);
  s.run();
  save_segment(campaign, segment);
  t.commit();
}

void CampaignStore::finish_submission(std::int64_t campaign, const SegmentRecord& segment,
                                      JobId job) {
  record_attempt_jobs("state='submitted', job_id=?, result_time=?", job, segment.seg.submit_time,
                      campaign, segment);
}

void CampaignStore::follow_twin(std::int64_t campaign, const SegmentRecord& segment,
                                JobId cancelled) {
  record_attempt_jobs("job_id=?, twin_job=?", segment.seg.slurm_job_id, cancelled, campaign,
                      segment);
}

void CampaignStore::update_attempt(const char* set, const std::string& text, std::int64_t campaign,
                                   const SegmentRecord& segment) {
  auto s = db_->prepare(std::string("UPDATE submissions SET ") + set +
                        " WHERE campaign_id=? AND idx=? AND attempt=?");
  s.bind(1, text).bind(2, campaign).bind(3, segment.seg.index).bind(4, segment.seg.attempts);
  s.run();
}

void CampaignStore::withdraw_submission(std::int64_t campaign, const SegmentRecord& segment,
                                        int attempt) {
  sql::Transaction t(*db_);
  for (const char* table : {"submissions", "wait_predictions"}) {
    auto s = db_->prepare(std::string("DELETE FROM ") + table +
                          " WHERE campaign_id=? AND idx=? AND attempt=?");
    s.bind(1, campaign).bind(2, segment.seg.index).bind(3, attempt);
    s.run();
  }
  save_segment(campaign, segment);
  t.commit();
}

void CampaignStore::refuse_submission(std::int64_t campaign, const SegmentRecord& segment,
                                      const std::string& why) {
  sql::Transaction t(*db_);
  update_attempt("state='refused', message=?", why, campaign, segment);
  save_segment(campaign, segment);
  t.commit();
}

void CampaignStore::record_outcome(std::int64_t campaign, const SegmentRecord& segment,
                                   const std::string& outcome) {
  update_attempt("outcome=?", outcome, campaign, segment);
}

void CampaignStore::note_submission(std::int64_t campaign, const SegmentRecord& segment,
                                    const std::string& note) {
  update_attempt("reason=reason || '; ' || ?", note, campaign, segment);
}

void CampaignStore::record_release(std::int64_t campaign, const SegmentRecord& segment,
                                   const std::string& why) {
  sql::Transaction t(*db_);
  update_attempt("reason=reason || '; released: ' || ?", why, campaign, segment);
  save_segment(campaign, segment);
  t.commit();
}

std::vector<SubmissionRecord> CampaignStore::submissions(std::int64_t campaign) const {
  auto s = db_->prepare(
      "SELECT campaign_id, idx, attempt, tag, state, job_id, intent_time, message, outcome, "
      "reason, twin_job FROM submissions WHERE campaign_id=? ORDER BY idx, attempt");
  s.bind(1, campaign);
  std::vector<SubmissionRecord> out;
  while (s.step())
    out.push_back({s.integer(0), static_cast<int>(s.integer(1)), static_cast<int>(s.integer(2)),
                   s.text(3), s.text(4), s.integer(5), s.integer(6), s.text(7), s.text(8),
                   s.text(9), s.integer(10)});
  return out;
}

void CampaignStore::log_decision(const DecisionRecord& d) {
  auto s = db_->prepare(
      "INSERT INTO decisions(campaign_id, idx, time, action, policy, confidence, forecast_start, "
      "slurm_start, slurm_note) VALUES(?,?,?,?,?,?,?,?,?)");
  s.bind(1, d.campaign)
      .bind(2, d.segment)
      .bind(3, d.time)
      .bind(4, d.action)
      .bind(5, d.policy)
      .bind(6, d.confidence)
      .bind(7, d.forecast_start)
      .bind(8, d.slurm_start)
      .bind(9, d.slurm_note);
  s.run();
}

std::vector<DecisionRecord> CampaignStore::decisions(std::int64_t campaign,
                                                     std::size_t limit) const {
  auto s = db_->prepare(
      "SELECT campaign_id, idx, time, action, policy, confidence, forecast_start, slurm_start, "
      "slurm_note FROM decisions WHERE campaign_id=? ORDER BY id DESC LIMIT ?");
  s.bind(1, campaign).bind(2, static_cast<std::int64_t>(limit));
  std::vector<DecisionRecord> out;
  while (s.step())
    out.push_back({s.integer(0), static_cast<int>(s.integer(1)), s.integer(2), s.text(3), s.text(4),
                   s.real(5), s.integer(6), s.integer(7), s.text(8)});
  return {out.rbegin(), out.rend()};
}

void CampaignStore::record_wait_prediction(const WaitPredictionRecord& r) {
  auto s = db_->prepare(
      "INSERT OR IGNORE INTO wait_predictions(campaign_id, idx, attempt, queued_at, predictor, "
      "predictor_digest, model, stated) VALUES(?,?,?,?,?,?,?,?)");
  s.bind(1, r.campaign)
      .bind(2, r.segment)
      .bind(3, r.attempt)
      .bind(4, r.queued_at)
      .bind(5, r.predictor)
      .bind(6, r.predictor_digest)
      .bind(7, nlohmann::json(r.model).dump())
      .bind(8, nlohmann::json(r.stated).dump());
  s.run();
}

namespace {

constexpr const char* kWaitColumns =
    "campaign_id, idx, attempt, queued_at, predictor, predictor_digest, model, stated, started, "
    "wait, (SELECT nodes FROM campaigns WHERE campaigns.id=wait_predictions.campaign_id)";

WaitPredictionRecord read_wait_row(sql::Statement& s) {
  WaitPredictionRecord r;
  r.campaign = s.integer(0);
  r.segment = static_cast<int>(s.integer(1));
  r.attempt = static_cast<int>(s.integer(2));
  r.queued_at = s.integer(3);
  r.predictor = s.text(4);
  r.predictor_digest = s.text(5);
  r.model = nlohmann::json::parse(s.text(6)).get<WaitQuantiles>();
  r.stated = nlohmann::json::parse(s.text(7)).get<WaitQuantiles>();
  r.started = s.integer(8);
  r.wait = s.integer(9);
  r.nodes = static_cast<int>(s.integer(10));
  return r;
}

}  // namespace

std::optional<WaitPredictionRecord> CampaignStore::record_wait_start(std::int64_t campaign,
                                                                     int segment, int attempt,
                                                                     Seconds start) {
  auto q = db_->prepare(std::string("SELECT ") + kWaitColumns +
                        " FROM wait_predictions WHERE campaign_id=? AND idx=? AND attempt=? AND "
                        "started < 0");
  q.bind(1, campaign).bind(2, segment).bind(3, attempt);
  if (!q.step()) return std::nullopt;
  WaitPredictionRecord r = read_wait_row(q);
  r.started = start;
  r.wait = std::max<Seconds>(0, start - r.queued_at);
  auto s = db_->prepare(
      "UPDATE wait_predictions SET started=?, wait=? WHERE campaign_id=? AND idx=? AND attempt=?");
  s.bind(1, r.started).bind(2, r.wait).bind(3, campaign).bind(4, segment).bind(5, attempt);
  s.run();
  return r;
}

std::vector<WaitPredictionRecord> CampaignStore::started_waits(std::optional<std::int64_t> campaign,
                                                               std::size_t limit,
                                                               const std::string& digest) const {
  auto s = db_->prepare(std::string("SELECT ") + kWaitColumns +
                        " FROM wait_predictions WHERE started >= 0 AND (? OR campaign_id=?) AND "
                        "(?='' OR predictor_digest=?) ORDER BY started DESC, campaign_id DESC, "
                        "idx DESC LIMIT ?");
  s.bind(1, static_cast<std::int64_t>(!campaign))
      .bind(2, campaign.value_or(0))
      .bind(3, digest)
      .bind(4, digest)
      .bind(5, static_cast<std::int64_t>(limit));
  std::vector<WaitPredictionRecord> out;
  while (s.step()) out.push_back(read_wait_row(s));
  return {out.rbegin(), out.rend()};
}

std::size_t CampaignStore::predicted_waits(std::optional<std::int64_t> campaign) const {
  auto s = db_->prepare("SELECT COUNT(*) FROM wait_predictions WHERE ? OR campaign_id=?");
  s.bind(1, static_cast<std::int64_t>(!campaign)).bind(2, campaign.value_or(0));
  s.step();
  return static_cast<std::size_t>(s.integer(0));
}

void CampaignStore::save_snapshot(const QueueSnapshot& snapshot) {
  const auto blob = encode_snapshot_blob(snapshot);
  auto s = db_->prepare("INSERT OR REPLACE INTO snapshots(time, data) VALUES(?, ?)");
  s.bind(1, snapshot.time).bind_blob(2, blob.data(), blob.size());
  s.run();
}

std::vector<QueueSnapshot> CampaignStore::load_snapshots(Seconds since) const {
  auto s = db_->prepare("SELECT data FROM snapshots WHERE time >= ? ORDER BY time");
  s.bind(1, since);
  std::vector<QueueSnapshot> out;
  while (s.step()) out.push_back(decode_snapshot_blob(s.blob(0)));
  return out;
}

void CampaignStore::prune_snapshots(Seconds before) {
  auto s = db_->prepare("DELETE FROM snapshots WHERE time < ?");
  s.bind(1, before);
  s.run();
}

void CampaignStore::set_value(const std::string& key, const std::string& value) {
  auto s = db_->prepare("INSERT OR REPLACE INTO kv(key, value) VALUES(?, ?)");
  s.bind(1, key).bind(2, value);
  s.run();
}

std::string CampaignStore::value(const std::string& key) const {
  auto s = db_->prepare("SELECT value FROM kv WHERE key=?");
  s.bind(1, key);
  return s.step() ? s.text(0) : std::string();
}

void CampaignStore::upsert_observed_jobs(const std::vector<SlurmJob>& jobs) {
  if (jobs.empty()) return;
  sql::Transaction t(*db_);
  auto s = db_->prepare(
      "INSERT OR REPLACE INTO observed_jobs(job_id, user_id, partition, state, submit, start, "
      "end, time_limit, nodes, gpus_per_node) VALUES(?,?,?,?,?,?,?,?,?,?)");
  for (const auto& j : jobs) {
    s.bind(1, j.id)
        .bind(2, static_cast<std::int64_t>(j.user_id))
        .bind(3, j.partition)
        .bind(4, to_string(j.state))
        .bind(5, j.submit)
        .bind(6, j.start)
        .bind(7, j.end)
        .bind(8, j.time_limit)
        .bind(9, j.nodes)
        .bind(10, j.gpus_per_node);
    s.run();
  }
  t.commit();
}

std::vector<SlurmJob> CampaignStore::finished_observed_jobs() const {
  auto s = db_->prepare(
      "SELECT job_id, user_id, partition, state, submit, start, end, time_limit, nodes, "
      "gpus_per_node FROM observed_jobs WHERE start >= 0 AND end >= start "
      "ORDER BY submit, job_id");
  std::vector<SlurmJob> out;
  while (s.step()) {
    SlurmJob j;
    j.id = s.integer(0);
    j.user_id = static_cast<std::uint32_t>(s.integer(1));
    j.partition = s.text(2);
    const std::string st = s.text(3);
    j.state = SlurmJobState::kCompleted;
    for (int k = 0; k <= static_cast<int>(SlurmJobState::kOutOfMemory); ++k)
      if (to_string(static_cast<SlurmJobState>(k)) == st) j.state = static_cast<SlurmJobState>(k);
    j.submit = s.integer(4);
    j.start = s.integer(5);
    j.end = s.integer(6);
    j.time_limit = s.integer(7);
    j.nodes = static_cast<int>(s.integer(8));
    j.gpus_per_node = static_cast<int>(s.integer(9));
    out.push_back(std::move(j));
  }
  return out;
}

std::size_t CampaignStore::observed_job_count() const {
  auto s = db_->prepare("SELECT COUNT(*) FROM observed_jobs");
  s.step();
  return static_cast<std::size_t>(s.integer(0));
}

}  // namespace mirage::daemon
