// The probes of a training window, cached in a file keyed by a fingerprint of everything that
// shapes them (the trace, the machine, the chain, the window, and the digest of the code that
// probes), so that agents trained on the same window share one probing.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ProbeSourceDigest.h"
#include "mirage/agents/learned/ProbeData.h"
#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/Fnv.h"

namespace mirage::learned {
namespace {

// 2: the logged world's unscored instants and episodes; 3: the predicted waits.
constexpr char kCacheMagic[] = "MIRAGE-PROBES 3\n";

// The log the logged world reads its waits from.
const Trace& logged_log(const Trace& trace, const ProbeSpec& spec) {
  return spec.yardstick_log ? *spec.yardstick_log : trace;
}

template <class T>
void put(std::ostream& out, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
void get(std::istream& in, T& v) {
  in.read(reinterpret_cast<char*>(&v), sizeof v);
}

void write_cache(const std::string& path, const std::string& fingerprint,
                 const std::vector<ProbedEpisode>& eps) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::ostringstream out(std::ios::binary);
  {
    out.write(kCacheMagic, sizeof kCacheMagic - 1);
    put(out, static_cast<std::uint64_t>(fingerprint.size()));
    out.write(fingerprint.data(), static_cast<std::streamsize>(fingerprint.size()));
    put(out, static_cast<std::uint64_t>(eps.size()));
    for (const ProbedEpisode& e : eps) {
      put(out, e.sample_time);
      put(out, e.predecessor_end);
      put(out, e.fallback_gap);
      put(out, e.unscored_instants);
      put(out, static_cast<std::uint8_t>(e.unscored));
      put(out, static_cast<std::uint64_t>(e.snapshots.size()));
      out.write(reinterpret_cast<const char*>(e.snapshots.data()),
                static_cast<std::streamsize>(e.snapshots.size() * sizeof(float)));
      put(out, static_cast<std::uint64_t>(e.decisions.size()));
      for (const ProbedDecision& d : e.decisions) {
        put(out, d.time);
        put(out, d.snapshot_index);
        out.write(reinterpret_cast<const char*>(d.campaign.data()),
                  static_cast<std::streamsize>(d.campaign.size() * sizeof(float)));
        put(out, d.gap_if_submitted);
        out.write(reinterpret_cast<const char*>(d.predicted_wait.data()),
                  static_cast<std::streamsize>(sizeof d.predicted_wait));
      }
    }
  }
  write_file_durably(path, out.view());
}

// Empty optional-like: returns false when the file is absent, foreign or for other probes.
bool read_cache(const std::string& path, const std::string& fingerprint,
                std::vector<ProbedEpisode>& eps) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char magic[sizeof kCacheMagic - 1];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kCacheMagic, sizeof magic) != 0) return false;
  std::uint64_t n = 0;
  get(in, n);
  if (!in || n > (1u << 20)) return false;
  std::string fp(n, '\0');
  in.read(fp.data(), static_cast<std::streamsize>(n));
  if (!in || fp != fingerprint) return false;
  get(in, n);
  eps.assign(n, {});
  for (ProbedEpisode& e : eps) {
    get(in, e.sample_time);
    get(in, e.predecessor_end);
    get(in, e.fallback_gap);
    get(in, e.unscored_instants);
    std::uint8_t unscored = 0;
    get(in, unscored);
    e.unscored = unscored != 0;
    std::uint64_t k = 0;
    get(in, k);
    if (!in || k > (1u << 26)) return false;
    e.snapshots.resize(k);
    in.read(reinterpret_cast<char*>(e.snapshots.data()),
            static_cast<std::streamsize>(k * sizeof(float)));
    get(in, k);
    if (!in || k > (1u << 20)) return false;
    e.decisions.resize(k);
    for (ProbedDecision& d : e.decisions) {
      get(in, d.time);
      get(in, d.snapshot_index);
      in.read(reinterpret_cast<char*>(d.campaign.data()),
              static_cast<std::streamsize>(d.campaign.size() * sizeof(float)));
      get(in, d.gap_if_submitted);
      in.read(reinterpret_cast<char*>(d.predicted_wait.data()),
              static_cast<std::streamsize>(sizeof d.predicted_wait));
    }
  }
  return static_cast<bool>(in);
}

}  // namespace

std::string file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot read the file");
  Fnv1a h;
  char buffer[1 << 14];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
    h.add(buffer, static_cast<std::size_t>(in.gcount()));
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h.h));
  return digest;
}

std::shared_ptr<const WaitPredictor> read_recorded_predictor(const std::string& path,
                                                             WaitPredictorRef* ref) {
  auto predictor = read_wait_predictor(path);
  if (ref) {
    ref->path = std::filesystem::absolute(path).lexically_normal().string();
    ref->digest = file_digest(path);
  }
  return predictor;
}

std::string probe_fingerprint(const Trace& trace, const ProbeSpec& s) {
  Fnv1a jobs;
  for (const Job& j : trace.jobs) {
    jobs.add(j.id);
    jobs.add(j.submit);
    jobs.add(j.start);
    jobs.add(j.end);
    jobs.add(j.time_limit);
    jobs.add(j.nodes);
    jobs.add(j.gpus_per_node);
    jobs.add(j.after_any);
    jobs.add(j.think);
    jobs.add(j.user.data(), j.user.size());
  }
  const ClusterSpec& c = s.cluster;
  // Each list's length first, so that the steps, boundaries and windows cannot run together.
  Fnv1a capacity;
  capacity.add(c.unavailable ? c.unavailable->size() : 0);
  if (c.unavailable)
    for (const CapacityStep& step : *c.unavailable) {
      capacity.add(step.from);
      capacity.add(step.unavailable_nodes);
    }
  // Boundaries and down windows hold jobs as capacity does: probes under others are not these.
  capacity.add(c.boundaries ? c.boundaries->size() : 0);
  if (c.boundaries)
    for (const WeeklyBoundaries& b : *c.boundaries) {
      capacity.add(b.from);
      capacity.add(b.to);
      capacity.add(b.offsets.size());
      for (const Seconds offset : b.offsets) capacity.add(offset);
    }
  capacity.add(c.down ? c.down->size() : 0);
  if (c.down)
    for (const DownWindow& w : *c.down) {
      capacity.add(w.from);
      capacity.add(w.to);
    }
  const EpisodeConfig& e = s.episode;
  std::ostringstream f;
  // The code's digest: probes from another build of the simulator or the encoder are not these.
  f << "code=" << MIRAGE_PROBE_SOURCE_DIGEST << " encoder=" << FeatureEncoder::kVersion
    << " jobs=" << trace.jobs.size() << ":" << std::hex << jobs.h << std::dec
    << " nodes=" << c.nodes << " gpus=" << c.gpus_per_node << " alloc=" << to_string(c.allocation)
    << " sched=" << c.scheduler.sched_interval << "," << c.scheduler.bf_interval << ","
    << c.scheduler.bf_window << "," << c.scheduler.bf_resolution << ","
    << c.scheduler.bf_max_job_test << "," << c.scheduler.bf_max_job_user << ","
    << to_string(c.scheduler.backfill) << " prio=" << c.priority.weight_age << ","
    << c.priority.weight_job_size << "," << c.priority.max_age << "," << c.priority.favor_small
    << "," << c.priority.weight_fairshare << "," << c.priority.decay_half_life
    << " limits=" << c.user_limits.max_running_jobs << "," << c.user_limits.max_running_nodes
    << " capacity=" << std::hex << capacity.h << std::dec << " chain=" << e.chain.nodes << "x"
    << e.chain.gpus_per_node << "," << e.chain.time_limit << "," << e.chain.runtime
    << " interval=" << e.decision_interval << " max_wait=" << e.max_wait
    << " lead=" << e.reactive_lead
    << " mode=" << (s.mode == EpisodeStartMode::kForkReplay ? "fork" : "peer")
    << " window=" << s.from << ".." << s.to << "/" << s.every << " world=" << to_string(s.world);
  // The logged world's outcomes are the log's waits as these settings pool them, less the jobs
  // its log marks dependent.
  if (s.world == SuccessorWait::kLogged) {
    Fnv1a marked;
    for (const Job& j : logged_log(trace, s).jobs)
      if (j.after_any != 0) {
        marked.add(j.id);
        marked.add(j.after_any);
      }
    f << ":" << s.logged_window << "," << s.logged_jobs << ",marked=" << std::hex << marked.h
      << std::dec;
  }
  // Probes with a predictor's quantiles hold that predictor's answers.
  f << " waits=" << (s.waits ? s.waits_ref.digest : "none");
  return f.str();
}

std::string probe_cache_file(const std::string& dir, const std::string& trace_path,
                             const Trace& trace, const ProbeSpec& spec) {
  Fnv1a h;
  const std::string fp = probe_fingerprint(trace, spec);
  h.add(fp.data(), fp.size());
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h.h));
  return (std::filesystem::path(dir) /
          (std::filesystem::path(trace_path).filename().string() + "." + digest + ".probes"))
      .string();
}

std::vector<ProbedEpisode> probe_or_load(const Trace& trace, const ProbeSpec& spec,
                                         const std::string& cache_path, int threads,
                                         const CountProgress& progress, bool* from_cache) {
  const std::string fp = probe_fingerprint(trace, spec);
  std::vector<ProbedEpisode> eps;
  if (!cache_path.empty() && read_cache(cache_path, fp, eps)) {
    if (from_cache) *from_cache = true;
    return eps;
  }
  if (from_cache) *from_cache = false;
  EpisodeConfig episode = spec.episode;
  std::optional<LoggedWaits> logged;
  episode.logged_waits = nullptr;
  if (spec.world == SuccessorWait::kLogged) {
    logged.emplace(logged_log(trace, spec), spec.logged_spec());
    episode.logged_waits = &*logged;
  }
  eps = probe_window(trace, spec.cluster, episode, spec.mode, spec.from, spec.to, spec.every,
                     threads, progress, spec.waits.get());
  if (!cache_path.empty()) write_cache(cache_path, fp, eps);
  return eps;
}

}  // namespace mirage::learned
