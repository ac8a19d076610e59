#include "mirage/simulator/CalibrationFile.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/core/TomlFile.h"
#include "mirage/simulator/CalibrationCache.h"

namespace mirage {
namespace {

struct Reader {
  std::string file;
  [[noreturn]] void fail(const toml::node& at, const std::string& key,
                         const std::string& what) const {
    throw InputError({file, toml_line(at), key}, what);
  }
  double weight(const toml::node& n, const std::string& key) const {
    const auto v = n.value<double>();  // integers too
    if (!v || !(*v >= 0) || *v > 1e9) fail(n, key, "expected a weight from 0 to 1e9");
    return *v;
  }
  Seconds duration(const toml::node& n, const std::string& key, Seconds lo, Seconds hi,
                   const char* example) const {
    const auto s = n.value<std::string>();
    const auto d = s ? parse_short_duration(*s) : std::nullopt;
    if (!d || *d < lo || *d > hi)
      fail(n, key,
           fmt::format("expected a duration from {}s to {}, such as \"{}\"", lo, short_duration(hi),
                       example));
    return *d;
  }
  static std::string short_duration(Seconds s) {
    if (s % kDay == 0) return fmt::format("{}d", s / kDay);
    if (s % kHour == 0) return fmt::format("{}h", s / kHour);
    if (s % kMinute == 0) return fmt::format("{}m", s / kMinute);
    return fmt::format("{}s", s);
  }
  bool flag(const toml::node& n, const std::string& key) const {
    const auto b = n.value<bool>();
    if (!b) fail(n, key, "expected true or false");
    return *b;
  }
  int count(const toml::node& n, const std::string& key, int hi) const {
    const auto v = n.as_integer();
    if (!v || v->get() < 0 || v->get() > hi)
      fail(n, key, fmt::format("expected an integer from 0 to {}", hi));
    return static_cast<int>(v->get());
  }
};

// The comment beside a limit: how many users reach the most seen, and how it stood against its
// null where enough did (LimitEvidence::describe).
std::string limit_note(const LimitEvidence& e, const char* what, int users_at, int users) {
  return e.candidate > 0
             ? e.describe(what, users_at, users)
             : fmt::format("{} of {} users reach the most {} seen", users_at, users, what);
}

}  // namespace

std::string calibration_path(const std::string& trace_path) {
  return trace_path + ".calibration.toml";
}

void write_calibration(const Calibration& c, const CalibrationSettings& settings, int nodes,
                       const std::string& trace_name, const std::string& path) {
  const std::string room = c.describe_room();
  std::ostringstream f;
  f << "# What the log leaves out of its cluster, inferred from " << trace_name
    << " by `mirage trace calibrate`.\n"
    << "# Read by simulate, eval, train and the daemon's simulator backend "
       "(--calibration auto or FILE).\n"
    << "# Edit freely; models: simulator/include/mirage/simulator/Calibration.h.\n"
    << "nodes = " << nodes << "\n\n"
    << "[user_limits]  # held as a QOS holds them; 0: none\n"
    << "max_running_jobs = " << c.user_limits.max_running_jobs << "  # "
    << limit_note(c.job_limit_evidence, "running jobs", c.users_at_job_limit, c.users) << "\n"
    << "max_running_nodes = " << c.user_limits.max_running_nodes << "  # "
    << limit_note(c.node_limit_evidence, "nodes", c.users_at_node_limit, c.users) << "\n\n"
    << "[capacity]\n"
    << "# Nodes held by work the log does not show, from each instant (UTC) to the next "
       "(replayed as background jobs that queue like the others); "
    << c.describe_congestion() << ", " << fmt::format("{:.1f}", c.mean_unavailable)
    << " nodes on average" << (room.empty() ? "" : "; " + room) << ".\n"
    << "unavailable = [";
  for (std::size_t i = 0; i < c.unavailable.size(); ++i)
    f << (i ? ",\n  " : "\n  ") << "[\"" << format_iso_time(c.unavailable[i].from) << "\", "
      << c.unavailable[i].unavailable_nodes << "]";
  f << (c.unavailable.empty() ? "]\n\n" : ",\n]\n\n") << "[boundaries]\n"
    << "# Instants of the week (UTC) no job may run across, as a weekly recurring reservation of "
       "every node\n# holds them (a site's switch between prime time and the night): each period "
       "from, to (UTC) and\n# its instants, such as \"Mon 07:00\"; hidden work ignores them.\n"
    << "weekly = [";
  for (std::size_t i = 0; i < c.boundaries.size(); ++i) {
    const WeeklyBoundaries& p = c.boundaries[i];
    f << (i ? ",\n  " : "\n  ") << "[\"" << format_iso_time(p.from) << "\", \""
      << format_iso_time(p.to) << "\", [";
    for (std::size_t k = 0; k < p.offsets.size(); ++k)
      f << (k ? ", " : "") << "\"" << format_week_offset(p.offsets[k]) << "\"";
    f << "]]";
  }
  f << (c.boundaries.empty() ? "]\n\n" : ",\n]\n\n") << "[down]\n"
    << "# Spans (UTC) in which no job started, as when a site sets the partition DOWN for "
       "maintenance:\n# jobs queue and running ones go on; each from, to. "
    << describe_down_windows(c.down) << ".\n"
    << "windows = [";
  for (std::size_t i = 0; i < c.down.size(); ++i)
    f << (i ? ",\n  " : "\n  ") << "[\"" << format_iso_time(c.down[i].from) << "\", \""
      << format_iso_time(c.down[i].to) << "\"]";
  f << (c.down.empty() ? "]\n\n" : ",\n]\n\n") << "[dependencies]  # " << c.dependencies.size()
    << " jobs when inferred, " << c.array_members << " of them members of throttled arrays\n"
    << "infer = " << (settings.dependencies ? "true" : "false")
    << "  # replay a job that waited for its user's earlier job as dependent on it\n"
    << "slack = \"" << settings.dependency_slack << "s\"  # a start this soon after that end\n"
    << "arrays = " << (settings.arrays ? "true" : "false")
    << "  # jobs one user submitted together, never all running at once: an array throttled to "
       "the most that ran\n"
    << "array_min_members = " << settings.array_min_members
    << "  # jobs submitted together that make an array\n\n"
    << "[feedback]  # " << c.followers.size() << " jobs when inferred"
    << (settings.feedback ? "" : "; " + c.describe_feedback_choice()) << "\n"
    << "infer = " << (settings.feedback || c.feedback ? "true" : "false")
    << "  # submit a job that its user submitted on seeing an earlier job end as that one ends\n"
    << "within = \"" << settings.feedback_within
    << "s\"  # a submission this soon after that end\n\n";
  if (const auto& p = c.priority) {
    f << "[priority]  # " << describe_evidence(*p) << "\n";
    f << fmt::format("weight_age = {:.1f}\n", p->weights.weight_age)
      << fmt::format("max_age = \"{}\"\n", Reader::short_duration(p->weights.max_age))
      << fmt::format("weight_fairshare = {:.1f}  # every user an equal share\n",
                     p->weights.weight_fairshare)
      << fmt::format("decay_half_life = \"{}\"  # of the usage fairshare counts\n",
                     Reader::short_duration(p->weights.decay_half_life))
      << fmt::format("weight_job_size = {:.1f}\n", p->weights.weight_job_size)
      << "favor_small = " << (p->weights.favor_small ? "true" : "false")
      << "  # the size factor shrinks as jobs grow\n";
  } else {
    f << "# [priority] not fitted: the log records no priority for its jobs, so the default "
         "weights\n# (or those of --slurm-conf) apply. Keys: weight_age, max_age, "
         "weight_fairshare, "
         "decay_half_life,\n# weight_job_size, favor_small.\n";
  }
  if (const auto& sp = c.scheduler) {
    f << "\n[scheduler]  # the site's slurm.conf, set by hand\n"
      << "backfill = \"" << to_string(sp->backfill) << "\"\n"
      << "sched_interval = \"" << Reader::short_duration(sp->sched_interval) << "\"\n"
      << "bf_interval = \"" << Reader::short_duration(sp->bf_interval) << "\"\n"
      << "bf_window = \"" << Reader::short_duration(sp->bf_window) << "\"\n"
      << "bf_resolution = \"" << Reader::short_duration(sp->bf_resolution) << "\"\n"
      << "bf_max_job_test = " << sp->bf_max_job_test << "\n"
      << "bf_max_job_user = " << sp->bf_max_job_user << "\n"
      << "priority_calc_period = \"" << Reader::short_duration(sp->priority_calc_period) << "\"\n";
  } else {
    f << "\n# [scheduler] not set: the defaults (or --slurm-conf) apply. Keys, as in slurm.conf: "
         "backfill "
         "(\"slurm\", \"easy\",\n# \"none\"), sched_interval, bf_interval, bf_window, "
         "bf_resolution, priority_calc_period (durations such as \"30s\", \"2d\"),\n# "
         "bf_max_job_test, bf_max_job_user (counts).\n";
  }
  write_file_durably(path, f.str());
}

namespace {

// Element k of `a`, an array of `size` elements, as an instant "YYYY-MM-DDTHH:MM:SS" (UTC);
// nullopt for anything else.
std::optional<Seconds> iso_time_at(const toml::array* a, std::size_t size, std::size_t k) {
  const auto text = a && a->size() == size ? (*a)[k].value<std::string>() : std::nullopt;
  return text ? parse_iso_time(*text) : std::nullopt;
}

}  // namespace

Calibration read_calibration(const std::string& path, CalibrationSettings& settings) {
  const toml::table root = read_toml_file(path, "the calibration file");
  const Reader r{path};
  Calibration c;
  auto unknown = [&](const toml::key& k, const std::string& full, const char* known) {
    throw InputError({path, static_cast<long>(k.source().begin.line), full},
                     std::string("unknown key (known: ") + known + ")");
  };
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    if (name == "nodes") {
      r.count(node, name, 1 << 20);
      continue;
    }
    const toml::table* t = node.as_table();
    if (!t &&
        (name == "user_limits" || name == "capacity" || name == "boundaries" || name == "down" ||
         name == "dependencies" || name == "feedback" || name == "priority" || name == "scheduler"))
      r.fail(node, name, "expected a table [" + name + "]");
    if (name == "user_limits") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() == "max_running_jobs")
          c.user_limits.max_running_jobs = r.count(v, full, 1 << 20);
        else if (k.str() == "max_running_nodes")
          c.user_limits.max_running_nodes = r.count(v, full, 1 << 20);
        else
          unknown(k, full, "max_running_jobs, max_running_nodes");
      }
    } else if (name == "capacity") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() != "unavailable") unknown(k, full, "unavailable");
        const toml::array* steps = v.as_array();
        if (!steps) r.fail(v, full, "expected an array of [\"YYYY-MM-DDTHH:MM:SS\", nodes] pairs");
        for (const toml::node& step : *steps) {
          const toml::array* pair = step.as_array();
          const auto when =
              pair && pair->size() == 2 ? (*pair)[0].value<std::string>() : std::nullopt;
          const auto t_at = when ? parse_iso_time(*when) : std::nullopt;
          if (!t_at) r.fail(step, full, "expected a pair [\"YYYY-MM-DDTHH:MM:SS\", nodes] (UTC)");
          const int n = r.count((*pair)[1], full, 1 << 20);
          if (!c.unavailable.empty() && *t_at <= c.unavailable.back().from)
            r.fail(step, full, "the instants must increase, step by step");
          c.unavailable.push_back({*t_at, n});
        }
      }
    } else if (name == "boundaries") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() != "weekly") unknown(k, full, "weekly");
        const toml::array* periods = v.as_array();
        const char* shape =
            "[\"YYYY-MM-DDTHH:MM:SS\", \"YYYY-MM-DDTHH:MM:SS\", [\"Mon 07:00\", ...]]";
        if (!periods) r.fail(v, full, std::string("expected an array of ") + shape);
        for (const toml::node& period : *periods) {
          const toml::array* p = period.as_array();
          const auto from = iso_time_at(p, 3, 0), to = iso_time_at(p, 3, 1);
          const toml::array* instants = p && p->size() == 3 ? (*p)[2].as_array() : nullptr;
          if (!from || !to || !instants) r.fail(period, full, std::string("expected ") + shape);
          WeeklyBoundaries b{from.value_or(0), to.value_or(0), {}};
          if (b.to <= b.from) r.fail(period, full, "a period must end after it begins");
          if (!c.boundaries.empty() && b.from < c.boundaries.back().to)
            r.fail(period, full, "the periods must follow one another without overlapping");
          for (const toml::node& at : *instants) {
            const auto text = at.value<std::string>();
            const auto offset = text ? parse_week_offset(*text) : std::nullopt;
            if (!offset) r.fail(at, full, "expected an instant of the week such as \"Mon 07:00\"");
            b.offsets.push_back(*offset);
          }
          std::sort(b.offsets.begin(), b.offsets.end());
          b.offsets.erase(std::unique(b.offsets.begin(), b.offsets.end()), b.offsets.end());
          c.boundaries.push_back(std::move(b));
        }
      }
    } else if (name == "down") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() != "windows") unknown(k, full, "windows");
        const toml::array* windows = v.as_array();
        const char* shape = "[\"YYYY-MM-DDTHH:MM:SS\", \"YYYY-MM-DDTHH:MM:SS\"] (UTC)";
        if (!windows) r.fail(v, full, std::string("expected an array of ") + shape);
        for (const toml::node& window : *windows) {
          const toml::array* p = window.as_array();
          const auto from = iso_time_at(p, 2, 0), to = iso_time_at(p, 2, 1);
          if (!from || !to) r.fail(window, full, std::string("expected ") + shape);
          const DownWindow w{from.value_or(0), to.value_or(0)};
          if (w.to <= w.from) r.fail(window, full, "a window must end after it begins");
          if (!c.down.empty() && w.from < c.down.back().to)
            r.fail(window, full, "the windows must follow one another without overlapping");
          c.down.push_back(w);
        }
      }
    } else if (name == "dependencies") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() == "infer") {
          settings.dependencies = r.flag(v, full);
        } else if (k.str() == "slack") {
          settings.dependency_slack = r.duration(v, full, 0, kDay, "2m");
        } else if (k.str() == "arrays") {
          settings.arrays = r.flag(v, full);
        } else if (k.str() == "array_min_members") {
          const int n = r.count(v, full, 1 << 20);
          if (n < 2) r.fail(v, full, "expected at least 2");
          settings.array_min_members = static_cast<std::size_t>(n);
        } else {
          unknown(k, full, "infer, slack, arrays, array_min_members");
        }
      }
    } else if (name == "feedback") {
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() == "infer") {
          settings.feedback = r.flag(v, full);
        } else if (k.str() == "within") {
          settings.feedback_within = r.duration(v, full, 0, kDay, "10m");
        } else {
          unknown(k, full, "infer, within");
        }
      }
    } else if (name == "priority") {
      PriorityFit p;
      p.weights = PriorityParameters{};
      p.weights.weight_age = p.weights.weight_job_size = 0;
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() == "weight_age") {
          p.weights.weight_age = r.weight(v, full);
        } else if (k.str() == "weight_fairshare") {
          p.weights.weight_fairshare = r.weight(v, full);
        } else if (k.str() == "weight_job_size") {
          p.weights.weight_job_size = r.weight(v, full);
        } else if (k.str() == "max_age") {
          p.weights.max_age = r.duration(v, full, 1, 365 * kDay, "7d");
        } else if (k.str() == "decay_half_life") {
          p.weights.decay_half_life = r.duration(v, full, 1, 365 * kDay, "4d");
        } else if (k.str() == "favor_small") {
          p.weights.favor_small = r.flag(v, full);
        } else {
          unknown(k, full,
                  "weight_age, max_age, weight_fairshare, decay_half_life, weight_job_size, "
                  "favor_small");
        }
      }
      c.priority = p;
    } else if (name == "scheduler") {
      SchedulerParameters sp;
      for (const auto& [k, v] : *t) {
        const std::string full = name + "." + std::string(k.str());
        if (k.str() == "backfill") {
          const auto text = v.value<std::string>();
          const auto mode = text ? parse_backfill_mode(*text) : std::nullopt;
          if (!mode) r.fail(v, full, "expected \"slurm\", \"easy\" or \"none\"");
          sp.backfill = *mode;
        } else if (k.str() == "sched_interval") {
          sp.sched_interval = r.duration(v, full, 1, kDay, "60s");
        } else if (k.str() == "bf_interval") {
          sp.bf_interval = r.duration(v, full, 1, kDay, "30s");
        } else if (k.str() == "bf_window") {
          sp.bf_window = r.duration(v, full, kMinute, 365 * kDay, "2d");
        } else if (k.str() == "bf_resolution") {
          sp.bf_resolution = r.duration(v, full, 1, kDay, "60s");
        } else if (k.str() == "bf_max_job_test") {
          sp.bf_max_job_test = r.count(v, full, 1 << 20);
          if (sp.bf_max_job_test == 0) r.fail(v, full, "expected at least 1");
        } else if (k.str() == "bf_max_job_user") {
          sp.bf_max_job_user = r.count(v, full, 1 << 20);
        } else if (k.str() == "priority_calc_period") {
          sp.priority_calc_period = r.duration(v, full, 0, kDay, "5m");
        } else {
          unknown(k, full,
                  "backfill, sched_interval, bf_interval, bf_window, bf_resolution, "
                  "bf_max_job_test, bf_max_job_user, priority_calc_period");
        }
      }
      c.scheduler = sp;
    } else {
      throw InputError({path, static_cast<long>(key.source().begin.line), name},
                       "unknown key (known: nodes, [user_limits], [capacity], [boundaries], "
                       "[down], [dependencies], [feedback], [priority], [scheduler])");
    }
  }
  return c;
}

}  // namespace mirage

namespace mirage {
namespace {

std::string summary(const Calibration& c) {
  const std::string room = c.describe_room();
  std::string priority = "; default priority weights";
  if (const auto& p = c.priority)
    priority = "; priority weights " + describe_weights(*p) + " (" + describe_evidence(*p) + ")";
  if (const auto& sp = c.scheduler)
    priority += fmt::format("; scheduler {} backfill, bf_window {}, bf_max_job_user {}",
                            to_string(sp->backfill), format_short_duration(sp->bf_window),
                            sp->bf_max_job_user);
  return fmt::format(
      "{} running jobs per user{}, {} capacity steps{}{}{}, {} jobs replayed as dependent ({} of "
      "them members of throttled arrays), {} as submitted on seeing their user's earlier job "
      "end{}",
      c.user_limits.max_running_jobs > 0 ? fmt::format("at most {}", c.user_limits.max_running_jobs)
                                         : std::string("unlimited"),
      c.user_limits.max_running_nodes > 0
          ? fmt::format(", at most {} nodes per user", c.user_limits.max_running_nodes)
          : std::string(),
      c.unavailable.size(), room.empty() ? std::string() : " (" + room + ")",
      c.boundaries.empty()
          ? std::string()
          : ", weekly boundaries no job ran across (" + c.describe_boundaries() + ")",
      c.down.empty() ? std::string()
                     : ", down windows no job started in (" + describe_down_windows(c.down) + ")",
      c.dependencies.size(), c.array_members, c.followers.size(), priority);
}

}  // namespace

Calibration resolve_calibration(const std::string& mode, const std::vector<Job>& jobs,
                                const std::string& trace_path, const ClusterSpec& spec,
                                std::string& said, const CalibrationSettings& inference) {
  said.clear();
  if (mode == "none") return {};
  CalibrationSettings settings = inference;
  std::string file = mode;
  if (mode == "auto")
    file = std::filesystem::exists(calibration_path(trace_path)) ? calibration_path(trace_path)
                                                                 : std::string("infer");
  if (file == "infer") {
    const CachedCalibration cached =
        cached_or_inferred(trace_path, calibration_cache_key(jobs, spec, settings, std::nullopt),
                           [&] { return infer_calibration(jobs, spec, settings); });
    // One line: what was inferred in full is `mirage trace calibrate`'s to print.
    said = describe_cached(cached, trace_path) +
           ": `mirage trace calibrate` prints what and saves it to edit, --calibration none "
           "replays without it";
    return cached.calibration;
  }
  Calibration c = read_calibration(file, settings);
  for (const CapacityStep& step : c.unavailable)
    if (step.unavailable_nodes >= spec.nodes)
      throw InputError({file, 0, "capacity.unavailable"},
                       fmt::format("{} nodes unavailable from {}, but the machine has {}",
                                   step.unavailable_nodes, format_iso_time(step.from), spec.nodes));
  if (!c.unavailable.empty() && spec.allocation != AllocationMode::kWholeNode)
    throw InputError({file, 0, "capacity.unavailable"},
                     "capacity over time is modelled for whole-node allocation only");
  infer_dependencies(jobs, spec, settings, c);
  said = fmt::format("calibration from {}: {}", file, summary(c));
  return c;
}

}  // namespace mirage
