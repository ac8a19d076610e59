#include "mirage/simulator/CalibrationCache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "mirage/core/CacheDir.h"
#include "mirage/core/DurableFile.h"
#include "mirage/core/Fnv.h"

namespace mirage {
namespace {

using nlohmann::json;

// The first line of every entry: a file of anything else is not one.
constexpr std::string_view kMagic = "mirage calibration cache\n";

std::string hex64(std::uint64_t h) {
  return fmt::format("{:016x}", h);
}

std::uint64_t fnv(std::string_view bytes) {
  Fnv1a h;
  h.add(bytes.data(), bytes.size());
  return h.h;
}

// Every field of every job, each string with its length first so that none runs into the next.
std::uint64_t jobs_digest(const std::vector<Job>& jobs) {
  Fnv1a h;
  for (const Job& j : jobs) {
    h.add(j.id);
    h.add(j.user.size());
    h.add(j.user.data(), j.user.size());
    h.add(j.partition.size());
    h.add(j.partition.data(), j.partition.size());
    h.add(j.submit);
    h.add(j.start);
    h.add(j.end);
    h.add(j.time_limit);
    h.add(j.nodes);
    h.add(j.gpus_per_node);
    h.add(j.after_any);
    h.add(j.think);
    h.add(j.run_time);
    h.add(j.priority);
  }
  return h.h;
}

// The lists a spec may already hold (a calibration applied before: none where commands infer).
std::uint64_t held_digest(const ClusterSpec& c) {
  Fnv1a h;
  h.add(c.unavailable ? c.unavailable->size() : 0);
  if (c.unavailable)
    for (const CapacityStep& s : *c.unavailable) {
      h.add(s.from);
      h.add(s.unavailable_nodes);
    }
  h.add(c.boundaries ? c.boundaries->size() : 0);
  if (c.boundaries)
    for (const WeeklyBoundaries& b : *c.boundaries) {
      h.add(b.from);
      h.add(b.to);
      h.add(b.offsets.size());
      for (const Seconds o : b.offsets) h.add(o);
    }
  h.add(c.down ? c.down->size() : 0);
  if (c.down)
    for (const DownWindow& w : *c.down) {
      h.add(w.from);
      h.add(w.to);
    }
  return h.h;
}

json to_json(const SchedulerParameters& s) {
  return {s.sched_interval,
          s.bf_interval,
          s.bf_window,
          s.bf_resolution,
          s.bf_max_job_test,
          s.bf_max_job_user,
          static_cast<int>(s.backfill),
          s.priority_calc_period};
}
SchedulerParameters scheduler_from(const json& j) {
  SchedulerParameters s;
  s.sched_interval = j.at(0);
  s.bf_interval = j.at(1);
  s.bf_window = j.at(2);
  s.bf_resolution = j.at(3);
  s.bf_max_job_test = j.at(4);
  s.bf_max_job_user = j.at(5);
  s.backfill = static_cast<BackfillMode>(j.at(6).get<int>());
  if (j.size() > 7) s.priority_calc_period = j.at(7);  // entries written before it have none
  return s;
}

json to_json(const PriorityParameters& p) {
  return {p.weight_age,  p.weight_job_size,  p.max_age,
          p.favor_small, p.weight_fairshare, p.decay_half_life};
}
PriorityParameters weights_from(const json& j) {
  PriorityParameters p;
  p.weight_age = j.at(0);
  p.weight_job_size = j.at(1);
  p.max_age = j.at(2);
  p.favor_small = j.at(3);
  p.weight_fairshare = j.at(4);
  p.decay_half_life = j.at(5);
  return p;
}

json to_json(const WaitFidelity& f) {
  return {f.group,         f.jobs,         f.real_mean_s,      f.sim_mean_s,
          f.real_median_s, f.sim_median_s, f.real_p90_s,       f.sim_p90_s,
          f.real_over_1h,  f.sim_over_1h,  f.rank_correlation, f.mean_ratio};
}
WaitFidelity fidelity_from(const json& j) {
  WaitFidelity f;
  f.group = j.at(0);
  f.jobs = j.at(1);
  f.real_mean_s = j.at(2);
  f.sim_mean_s = j.at(3);
  f.real_median_s = j.at(4);
  f.sim_median_s = j.at(5);
  f.real_p90_s = j.at(6);
  f.sim_p90_s = j.at(7);
  f.real_over_1h = j.at(8);
  f.sim_over_1h = j.at(9);
  f.rank_correlation = j.at(10);
  f.mean_ratio = j.at(11);
  return f;
}

json to_json(const PriorityFit& p) {
  json j = {{"weights", to_json(p.weights)},
            {"r2", p.r2},
            {"jobs", p.jobs},
            {"outliers", p.outliers},
            {"candidates", p.candidates},
            {"age_candidates", p.age_candidates},
            {"like_fcfs", p.like_fcfs},
            {"ranks", {p.fcfs_rank, p.closest_rank}},
            {"replay", to_json(p.replay)},
            {"replay_waits", nullptr}};
  if (p.replay_waits) j["replay_waits"] = *p.replay_waits;
  return j;
}
PriorityFit fit_from(const json& j) {
  PriorityFit p;
  p.weights = weights_from(j.at("weights"));
  p.r2 = j.at("r2");
  p.jobs = j.at("jobs");
  p.outliers = j.at("outliers");
  p.candidates = j.at("candidates");
  p.age_candidates = j.at("age_candidates");
  p.like_fcfs = j.at("like_fcfs");
  p.fcfs_rank = j.at("ranks").at(0);
  p.closest_rank = j.at("ranks").at(1);
  p.replay = fidelity_from(j.at("replay"));
  if (!j.at("replay_waits").is_null())
    p.replay_waits = std::make_shared<const std::vector<Seconds>>(
        j.at("replay_waits").get<std::vector<Seconds>>());
  return p;
}

json to_json(const LimitEvidence& e) {
  return {e.candidate,   e.waiting_jobs,   e.compared_jobs, e.free_at_limit, e.free_under,
          e.free_sigmas, e.taken_at_limit, e.taken_under,   e.taken_sigmas,  e.told_apart};
}

LimitEvidence limit_evidence_from(const json& j) {
  return {j.at(0), j.at(1), j.at(2), j.at(3), j.at(4), j.at(5), j.at(6), j.at(7), j.at(8), j.at(9)};
}

// Every field of Calibration: one added there must be added here (and the version bumped).
json to_json(const Calibration& c) {
  json j;
  j["user_limits"] = {c.user_limits.max_running_jobs, c.user_limits.max_running_nodes};
  j["unavailable"] = json::array();
  for (const CapacityStep& s : c.unavailable)
    j["unavailable"].push_back({s.from, s.unavailable_nodes});
  j["boundaries"] = json::array();
  for (const WeeklyBoundaries& b : c.boundaries)
    j["boundaries"].push_back({b.from, b.to, b.offsets});
  j["down"] = json::array();
  for (const DownWindow& d : c.down) j["down"].push_back({d.from, d.to});
  j["priority"] = c.priority ? to_json(*c.priority) : json(nullptr);
  j["scheduler"] = c.scheduler ? to_json(*c.scheduler) : json(nullptr);
  j["users"] = {c.users, c.users_at_job_limit, c.users_at_node_limit};
  j["limit_evidence"] = {to_json(c.job_limit_evidence), to_json(c.node_limit_evidence)};
  j["windows"] = {c.window, c.windows, c.congested_windows};
  j["mean_unavailable"] = c.mean_unavailable;
  j["capacity_share"] = c.capacity_share;
  j["share_candidates"] = c.share_candidates;
  j["idle_by_chance"] = c.idle_by_chance;
  j["links"] = {c.links_seen, c.links_by_chance, c.links_told_apart};
  j["dependencies"] = c.dependencies;
  j["array_members"] = c.array_members;
  j["followers"] = json::array();
  for (const Calibration::Follower& f : c.followers)
    j["followers"].push_back({f.job, f.after, f.think});
  j["feedback"] = c.feedback;
  j["feedback_choice"] = static_cast<int>(c.feedback_choice);
  j["followers_against_chance"] = {c.followers_seen, c.followers_by_chance};
  return j;
}

Calibration calibration_from(const json& j) {
  Calibration c;
  c.user_limits.max_running_jobs = j.at("user_limits").at(0);
  c.user_limits.max_running_nodes = j.at("user_limits").at(1);
  for (const json& s : j.at("unavailable")) c.unavailable.push_back({s.at(0), s.at(1)});
  for (const json& b : j.at("boundaries"))
    c.boundaries.push_back({b.at(0), b.at(1), b.at(2).get<std::vector<Seconds>>()});
  for (const json& d : j.at("down")) c.down.push_back({d.at(0), d.at(1)});
  if (!j.at("priority").is_null()) c.priority = fit_from(j.at("priority"));
  if (!j.at("scheduler").is_null()) c.scheduler = scheduler_from(j.at("scheduler"));
  c.users = j.at("users").at(0);
  c.users_at_job_limit = j.at("users").at(1);
  c.users_at_node_limit = j.at("users").at(2);
  c.job_limit_evidence = limit_evidence_from(j.at("limit_evidence").at(0));
  c.node_limit_evidence = limit_evidence_from(j.at("limit_evidence").at(1));
  c.window = j.at("windows").at(0);
  c.windows = j.at("windows").at(1);
  c.congested_windows = j.at("windows").at(2);
  c.mean_unavailable = j.at("mean_unavailable");
  c.capacity_share = j.at("capacity_share");
  c.share_candidates = j.at("share_candidates");
  c.idle_by_chance = j.at("idle_by_chance");
  c.links_seen = j.at("links").at(0);
  c.links_by_chance = j.at("links").at(1);
  c.links_told_apart = j.at("links").at(2);
  c.dependencies = j.at("dependencies").get<std::vector<std::pair<JobId, JobId>>>();
  c.array_members = j.at("array_members");
  for (const json& f : j.at("followers")) c.followers.push_back({f.at(0), f.at(1), f.at(2)});
  c.feedback = j.at("feedback");
  const int choice = j.at("feedback_choice");
  if (choice < 0 || choice > static_cast<int>(Calibration::FeedbackChoice::kByChance))
    throw std::out_of_range("feedback_choice");
  c.feedback_choice = static_cast<Calibration::FeedbackChoice>(choice);
  c.followers_seen = j.at("followers_against_chance").at(0);
  c.followers_by_chance = j.at("followers_against_chance").at(1);
  return c;
}

// A name for the trace in a file name: its base name, with anything but [A-Za-z0-9._-] as '_'.
std::string file_stem(const std::string& trace_name) {
  std::string s = std::filesystem::path(trace_name).filename().string();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_')
      ch = '_';
  return s.empty() ? std::string("trace") : s;
}

bool cache_off() {
  const char* v = std::getenv("MIRAGE_CALIBRATION_CACHE");
  return v && (std::string_view(v) == "off" || std::string_view(v) == "0");
}

std::optional<std::string> read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string calibration_cache_key(const std::vector<Job>& jobs, const ClusterSpec& spec,
                                  const CalibrationSettings& s, std::optional<Seconds> fit_until) {
  const SchedulerParameters& sc = spec.scheduler;
  const PriorityParameters& p = spec.priority;
  // Doubles as fmt writes them: the shortest text that reads back as the same value.
  std::string machine = fmt::format(
      "nodes={} gpus={} alloc={} sched={},{},{},{},{},{},{} prio={},{},{},{},{},{} limits={},{} "
      "held={}",
      spec.nodes, spec.gpus_per_node, to_string(spec.allocation), sc.sched_interval, sc.bf_interval,
      sc.bf_window, sc.bf_resolution, sc.bf_max_job_test, sc.bf_max_job_user,
      to_string(sc.backfill), p.weight_age, p.weight_job_size, p.max_age, p.favor_small,
      p.weight_fairshare, p.decay_half_life, spec.user_limits.max_running_jobs,
      spec.user_limits.max_running_nodes, hex64(held_digest(spec)));
  // Only where set: the keys made before the period was modelled stand.
  if (sc.priority_calc_period > 0) machine += fmt::format(" calc={}", sc.priority_calc_period);
  const std::string inference = fmt::format(
      "settings={},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{} tests={},{},{},{},{} "
      "fit_until={} version={}",
      s.capacity_window, s.capacity_share, s.choose_capacity_share, s.sample_every,
      s.limit_min_users, s.dependencies, s.dependency_slack, s.arrays, s.array_min_members,
      s.feedback, s.feedback_within, s.choose_feedback, s.priority, s.boundaries,
      s.boundary_stretch, s.boundary_share, s.down_windows, s.down_min, s.down_share, s.test_room,
      s.test_links, s.test_rank, s.test_feedback, s.test_limits,
      fit_until ? fmt::format("{},carry={}", *fit_until, kForwardCarryVersion)
                : std::string("none"),
      kCalibrationCodeVersion);
  return fmt::format("jobs={}:{} {} {}", jobs.size(), hex64(jobs_digest(jobs)), machine, inference);
}

std::string encode_calibration_entry(const std::string& key, const Calibration& c) {
  const std::vector<std::uint8_t> body =
      json::to_cbor(json{{"key", key}, {"calibration", to_json(c)}});
  const std::string_view bytes(reinterpret_cast<const char*>(body.data()), body.size());
  std::string out(kMagic);
  out += hex64(fnv(bytes));
  out += '\n';
  out += bytes;
  return out;
}

std::optional<Calibration> decode_calibration_entry(std::string_view bytes,
                                                    const std::string& key) {
  if (!bytes.starts_with(kMagic)) return std::nullopt;
  bytes.remove_prefix(kMagic.size());
  if (bytes.size() < 17 || bytes[16] != '\n') return std::nullopt;
  const std::string_view sum = bytes.substr(0, 16);
  bytes.remove_prefix(17);
  if (sum != hex64(fnv(bytes))) return std::nullopt;
  try {
    const json j = json::from_cbor(bytes.begin(), bytes.end());
    if (j.at("key").get<std::string>() != key) return std::nullopt;
    return calibration_from(j.at("calibration"));
  } catch (const json::exception&) {
    return std::nullopt;
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

CachedCalibration cached_or_inferred(const std::string& trace_name, const std::string& key,
                                     const std::function<Calibration()>& infer) {
  CachedCalibration r;
  if (cache_off()) {
    r.calibration = infer();
    return r;
  }
  try {
    const std::string dir = user_cache_dir("calibrations");
    r.path = (std::filesystem::path(dir) /
              fmt::format("{}.{}.calibration", file_stem(trace_name), hex64(fnv(key))))
                 .string();
  } catch (const std::exception& e) {
    r.note = e.what();
    r.calibration = infer();
    return r;
  }
  if (const auto bytes = read_whole(r.path))
    if (auto c = decode_calibration_entry(*bytes, key)) {
      r.calibration = std::move(*c);
      r.read = true;
      return r;
    }
  r.calibration = infer();
  try {
    // Written under a name of this process's own, then renamed: two commands inferring the same
    // entry at once (ctest -j, a farm of evals) each put a whole one in place.
    const std::string part = fmt::format("{}.{}.part", r.path, ::getpid());
    write_file_durably(part, encode_calibration_entry(key, r.calibration));
    std::filesystem::rename(part, r.path);
  } catch (const std::exception& e) {
    r.note = e.what();
    r.path.clear();
  }
  return r;
}

std::string describe_cached(const CachedCalibration& cached, const std::string& trace_name) {
  const std::string congestion = cached.calibration.describe_congestion();
  if (cached.read)
    return fmt::format(
        "calibration of {} read from {} ({}; inferred once for this trace and "
        "machine)",
        trace_name, cached.path, congestion);
  const std::string saved = !cached.path.empty() ? ", saved to " + cached.path
                            : !cached.note.empty()
                                ? ", not cached: " + cached.note
                                : std::string(", not cached: MIRAGE_CALIBRATION_CACHE=off");
  return fmt::format("calibration inferred from {} ({}{})", trace_name, congestion, saved);
}

}  // namespace mirage
