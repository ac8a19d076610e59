// `mirage campaign add|list|show|cancel|pause|resume`: the daemon's client, or with --config and
// no daemon running, the same requests served on its store. Human tables by default, --json for
// scripts; a clear message and exit status 3 when neither the daemon nor a store is at hand.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "Commands.h"
#include "RenamedFlags.h"
#include "TimeFlags.h"
#include "Validators.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/daemon/control/ControlProtocol.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"

extern char** environ;

namespace mirage::cli {
namespace {

using json = nlohmann::json;

// A string field of a reply as it may be shown: names, messages and paths are the user's text.
std::string text(const json& j, const char* key) {
  return escape_control(j.at(key).get<std::string>());
}

// The fallback chain and the cap on run time, in words.
std::string chain_text(const json& c) {
  std::string out = c.value("fallback_chain", false)
                        ? "fallback: each successor waits in Slurm behind the running segment "
                          "(afterany) until the policy releases it"
                        : "no fallback: each successor is submitted when the policy decides";
  const double cap = c.value("max_hours", 0.0);
  if (cap > 0) out += fmt::format("; at most {:g} h of run time in all", cap);
  return out;
}

// Shape flags left at their "unset" values leave the shape to the script's #SBATCH lines.
struct AddOptions {
  DaemonSocketOptions where;
  std::string name;
  std::string script;
  int segments = 0;        // 0: open-ended
  int nodes = 0;           // 0: unset
  int gpus_per_node = -1;  // -1: unset
  std::string time;
  std::string partition;
  std::string account;
  std::string qos;
  int max_retries = -1;        // -1: the daemon's default
  std::string fallback_chain;  // on, off; empty: the daemon's default
  double max_hours = 0;        // 0: no cap
  std::string done_file;
  std::string policy;
  std::string max_overlap;  // instead of a policy: the daemon picks from its risk frontier
  std::string overlap = "concurrent";
  std::string handoff_grace;  // empty: the daemon's [handoff] grace
  bool no_export = false;
  long long adopt = 0;      // a job already queued or running that becomes segment 0
  std::string request_key;  // empty: a new random one
  bool json = false;
};

struct IdOptions {
  DaemonSocketOptions where;
  std::int64_t id = 0;
  bool json = false;
};

struct ListOptions {
  DaemonSocketOptions where;
  bool json = false;
};

std::string when(Seconds t) {
  return t < 0 ? "-" : format_iso_time(t);
}

std::string limit_text(const json& c) {
  const auto limit = c.at("time_limit").get<Seconds>();
  return limit > 0 ? format_short_duration(limit) : "partition's default";
}

// "3/8", or "3/-" for an open-ended campaign.
std::string done_of(const json& c) {
  const int bound = c.at("segments").get<int>();
  return fmt::format("{}/{}", c.at("done").get<int>(), bound > 0 ? std::to_string(bound) : "-");
}

std::string or_default(const json& c, const char* key) {
  return c.at(key).get<std::string>().empty() ? "(default)" : text(c, key);
}

// "2 node(s) x 4 GPU(s), limit 2d, partition gpu, account (default), qos (default)"
std::string shape_text(const json& c) {
  return fmt::format("{} node(s) x {} GPU(s), limit {}, partition {}, account {}, qos {}",
                     c.at("nodes").get<int>(), c.at("gpus_per_node").get<int>(), limit_text(c),
                     or_default(c, "partition"), or_default(c, "account"), or_default(c, "qos"));
}

void print_summary_line(const json& c) {
  fmt::print("campaign {} '{}': {} ({} segments done)\n", c.at("id").get<long long>(),
             text(c, "name"), c.at("state").get<std::string>(), done_of(c));
}

// How one submission ended, for the history: refused, the job's end, or where it is now.
std::string ending_text(const json& a, const json* segment) {
  const auto job = a.at("job_id").get<long long>();
  const std::string refused = a.value("message", std::string());
  const std::string outcome = a.value("outcome", std::string());
  if (!refused.empty()) return "refused: " + escape_control(refused);
  if (!outcome.empty()) return fmt::format("job {} ended {}", job, escape_control(outcome));
  if (a.at("state").get<std::string>() == "submitting")
    return "outcome not known yet: looked up in Slurm by its tag";
  const bool current = segment && segment->at("attempts").get<int>() == a.at("attempt").get<int>();
  if (current && segment->at("job_id").get<long long>() == job)
    return fmt::format("job {} {}", job, segment->at("state").get<std::string>());
  return fmt::format("job {}: its end was not seen", job);
}

// A segment's hand-off steps as Slurm took them ("signal sent 2026-...; cancel after the grace
// not yet taken by Slurm"), or "" before the first.
std::string handoff_text(const json& segment) {
  std::string out;
  for (const auto& [key, what] : {std::pair{"signal_sent_at", "signal"},
                                  std::pair{"cancel_sent_at", "cancel after the grace"}}) {
    if (!segment.contains(key)) continue;
    const auto at = segment.at(key).get<Seconds>();
    out += (out.empty() ? "" : "; ") + std::string(what) +
           (at >= 0 ? " sent " + when(at) : " not yet taken by Slurm");
  }
  return out;
}

// The script as sbatch would read it, checked here too so that a script sbatch would refuse is
// refused before the daemon is asked. Its size first, from the file system: a script over the
// limit is not read.
std::string read_script(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError({path, 0, "--script"}, "cannot read the script: " + ec.message());
  if (auto why = daemon::script_size_problem(path, size)) throw *why;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError({path, 0, "--script"}, "cannot read the script");
  // No more than the limit allows, should the file grow meanwhile.
  std::string script(static_cast<std::size_t>(daemon::kMaxScriptBytes) + 1, '\0');
  f.read(script.data(), static_cast<std::streamsize>(script.size()));
  script.resize(static_cast<std::size_t>(f.gcount()));
  if (auto why = daemon::script_size_problem(path, script.size())) throw *why;
  const auto directives = daemon::read_batch_directives(script, path);
  if (directives.error) throw *directives.error;
  if (directives.short_option_with_equals) throw *directives.short_option_with_equals;
  return script;
}

std::string random_request_key() {
  std::random_device rd;
  std::string key;
  for (int i = 0; i < 4; ++i) key += fmt::format("{:08x}", static_cast<unsigned>(rd()));
  return key;
}

int run_add(const AddOptions& o) {
  const auto limit = parse_duration(o.time);
  if (!o.time.empty() &&
      (!limit || *limit < daemon::kMinTimeLimit || *limit > daemon::kMaxTimeLimit))
    throw InputError({"", 0, "--time"}, "expected a time limit from " +
                                            format_short_duration(daemon::kMinTimeLimit) + " to " +
                                            format_short_duration(daemon::kMaxTimeLimit) +
                                            ", such as 2d, 48:00:00 or 2-00:00:00; got '" +
                                            escape_control(o.time) + "'");
  Seconds grace = -1;  // none given: the daemon's [handoff] grace
  if (!o.handoff_grace.empty()) {
    const auto given = parse_duration(o.handoff_grace);
    if (!given || *given > daemon::kMaxHandoffGrace)
      throw InputError({"", 0, "--handoff-grace"},
                       "expected a duration such as 5m, at most " +
                           std::to_string(daemon::kMaxHandoffGrace / kDay) + "d");
    grace = *given;
  }
  const std::string script = read_script(o.script);
  std::string policy = o.policy;
  // A model file is passed by absolute path (with its threshold, MODEL@THRESHOLD): the daemon
  // does not share our working directory.
  if (const PolicySpec spec = parse_policy_spec(policy);
      !policy.empty() && std::filesystem::exists(spec.family))
    policy = std::filesystem::absolute(spec.family).string() + policy.substr(spec.family.size());
  if (!o.max_overlap.empty() && !policy.empty())
    throw InputError({"", 0, "--max-overlap"}, "give --policy or --max-overlap, not both");
  json c = {{"name", o.name},
            {"script_base64", daemon::base64_encode(script)},  // any bytes, not only UTF-8
            {"script_path", std::filesystem::absolute(o.script).string()},
            {"overlap", o.overlap},
            {"work_dir", std::filesystem::current_path().string()}};
  // Only the flags given: the script's #SBATCH lines (and the daemon's config) decide the rest.
  if (grace >= 0) c["handoff_grace"] = grace;
  if (o.segments > 0) c["segments"] = o.segments;
  if (o.nodes > 0) c["nodes"] = o.nodes;
  if (o.gpus_per_node >= 0) c["gpus_per_node"] = o.gpus_per_node;
  if (limit) c["time_limit"] = *limit;
  if (!o.partition.empty()) c["partition"] = o.partition;
  if (!o.account.empty()) c["account"] = o.account;
  if (!o.qos.empty()) c["qos"] = o.qos;
  if (o.max_retries >= 0) c["max_retries"] = o.max_retries;
  if (!o.fallback_chain.empty()) c["fallback_chain"] = o.fallback_chain == "on";
  if (o.max_hours > 0) c["max_hours"] = o.max_hours;
  if (!o.done_file.empty()) c["done_file"] = std::filesystem::absolute(o.done_file).string();
  if (!policy.empty()) c["policy"] = policy;
  if (o.adopt > 0) c["adopt_job"] = o.adopt;
  if (!o.max_overlap.empty())
    c["max_overlap"] = parse_nonnegative_duration_flag(o.max_overlap, "--max-overlap");
  // Like sbatch's default --export=ALL: the segments see the environment of `campaign add`;
  // --no-export-env is --export=NONE (the daemon says it on sbatch's command line).
  json env = json::array();
  std::string umask_entry;  // the shell's own SLURM_UMASK, if it sets one
  for (char** e = environ; e && *e; ++e) {
    if (std::string_view(*e).rfind("SLURM_UMASK=", 0) == 0) umask_entry = *e;
    if (!o.no_export) env.push_back(*e);
  }
  // sbatch gives the job its caller's umask (SLURM_UMASK) where the environment sets none, even
  // with --export=NONE; the daemon and the tick run with 0077, so without the user's own the
  // segments' checkpoints and logs would be theirs alone, unlike a job they submit by hand.
  if (umask_entry.empty()) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    umask_entry = daemon::slurm_umask_entry(mask);
    if (!o.no_export) env.push_back(umask_entry);
  }
  if (o.no_export) {
    env.push_back(umask_entry);
    c["export_environment"] = false;
  }
  c["environment"] = env;
  // One key for this command: a retry after a lost reply, through the socket or the store,
  // returns the campaign the first try made.
  c["request_key"] = o.request_key.empty() ? random_request_key() : o.request_key;
  int rc = 0;
  const auto reply = ask_daemon(o.where, {{"op", "add"}, {"campaign", c}}, rc);
  if (!reply) return rc;
  const json& r = reply->at("campaign");
  const json notes = reply->value("notes", json::array());
  if (o.json) {
    json out = r;
    out["notes"] = notes;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  const int bound = r.at("segments").get<int>();
  fmt::print("campaign {} '{}' added: {}, policy {}, {}\n", r.at("id").get<long long>(),
             text(r, "name"),
             bound > 0 ? fmt::format("up to {} segments", bound)
                       : std::string("open-ended (until a segment creates its done file)"),
             text(r, "policy"), r.at("overlap").get<std::string>());
  fmt::print("  shape      {}\n", shape_text(r));
  fmt::print("  done file  {} (MIRAGE_DONE_FILE); retries {}\n", text(r, "done_file"),
             r.at("max_retries").get<int>());
  fmt::print("  chain      {}\n", chain_text(r));
  for (const auto& n : notes) fmt::print("  note: {}\n", escape_control(n.get<std::string>()));
  return 0;
}

int run_list(const ListOptions& o) {
  int rc = 0;
  const auto reply = ask_daemon(o.where, {{"op", "list"}}, rc);
  if (!reply) return rc;
  const json& list = reply->at("campaigns");
  if (o.json) {
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  if (list.empty()) {
    fmt::print("no campaigns (add one with `mirage campaign add`)\n");
    return 0;
  }
  fmt::print("{:>5}  {:<20}  {:<9}  {:>8}  {:>10}  {:<10}  {:<10}  {:>9}  {:<12}\n", "ID", "NAME",
             "STATE", "DONE", "JOB", "POLICY", "OVERLAP", "SIZE", "LIMIT");
  for (const auto& c : list) {
    const auto job = c.at("current_job").get<long long>();
    std::string policy = text(c, "policy");
    if (policy.size() > 10) policy = "..." + policy.substr(policy.size() - 7);
    std::string name = text(c, "name");
    if (name.size() > 20) name = name.substr(0, 19) + "~";
    fmt::print("{:>5}  {:<20}  {:<9}  {:>8}  {:>10}  {:<10}  {:<10}  {:>9}  {:<12}\n",
               c.at("id").get<long long>(), name, c.at("state").get<std::string>(), done_of(c),
               job > 0 ? std::to_string(job) : "-", policy, c.at("overlap").get<std::string>(),
               fmt::format("{}x{}", c.at("nodes").get<int>(), c.at("gpus_per_node").get<int>()),
               limit_text(c));
  }
  return 0;
}

// What a finished campaign cost, in the units users pay: from its first submission to its last
// segment's end; the gaps between one segment's end and the next one's start (interruption); the
// time two segments ran at once (overlap); and GPU-hours charged (node-hours where the segments
// asked for no GPU).
void print_totals(const json& c) {
  std::vector<std::pair<Seconds, Seconds>> runs;  // start, end of each segment that ran
  Seconds first_submit = kUnknownTime;
  for (const auto& s : c.at("segment_list")) {
    const auto submit = s.at("submit_time").get<Seconds>();
    if (submit >= 0 && (first_submit == kUnknownTime || submit < first_submit))
      first_submit = submit;
    const auto start = s.at("start_time").get<Seconds>(), end = s.at("end_time").get<Seconds>();
    if (start >= 0 && end >= start) runs.emplace_back(start, end);
  }
  if (runs.empty() || first_submit == kUnknownTime) {
    fmt::print("\n  totals     no segment ran\n");
    return;
  }
  std::sort(runs.begin(), runs.end());
  Seconds interruption = 0, overlap = 0, ran = 0, last_end = runs.front().first;
  for (const auto& [start, end] : runs) {
    if (start > last_end) interruption += start - last_end;
    overlap += std::max<Seconds>(0, std::min(end, last_end) - start);
    ran += end - start;
    last_end = std::max(last_end, end);
  }
  const int nodes = c.at("nodes").get<int>(), gpus = c.at("gpus_per_node").get<int>();
  const double hours = static_cast<double>(ran) / kHour;
  fmt::print("\n  totals     makespan {}, {} segment(s) ran {}; interruption {}, overlap {}; {}\n",
             format_short_duration(last_end - first_submit), runs.size(),
             format_short_duration(ran), format_short_duration(interruption),
             format_short_duration(overlap),
             gpus > 0 ? fmt::format("{:.1f} GPU-hours charged", hours * nodes * gpus)
                      : fmt::format("{:.1f} node-hours charged", hours * nodes));
}

int run_show(const IdOptions& o) {
  int rc = 0;
  const auto reply = ask_daemon(o.where, {{"op", "show"}, {"id", o.id}}, rc);
  if (!reply) return rc;
  const json& c = reply->at("campaign");
  if (o.json) {
    std::cout << c.dump(2) << "\n";
    return 0;
  }
  print_summary_line(c);
  if (!c.at("message").get<std::string>().empty()) fmt::print("  {}\n", text(c, "message"));
  fmt::print("  script     {}\n", text(c, "script_path"));
  fmt::print("  shape      {} ({})\n", shape_text(c),
             c.at("shape_granted").get<bool>() ? "as Slurm granted it"
                                               : "asked; Slurm's record of the first job decides");
  std::string flags;
  for (const auto& opt : c.at("sbatch_options")) flags += " " + opt.get<std::string>();
  if (!flags.empty())
    fmt::print("  flags     {} (over the script's #SBATCH lines)\n", escape_control(flags));
  fmt::print("  done file  {} (MIRAGE_DONE_FILE); retries {}\n", text(c, "done_file"),
             c.at("max_retries").get<int>());
  fmt::print("  chain      {}\n", chain_text(c));
  fmt::print("  policy     {}, overlap {} (hand-off grace {})\n", text(c, "policy"),
             c.at("overlap").get<std::string>(),
             format_short_duration(c.at("handoff_grace").get<Seconds>()));
  fmt::print("  created    {}\n", when(c.at("created").get<Seconds>()));
  if (!c.value("rerun_check", std::string()).empty())
    fmt::print(
        "  restore    not checked: whether the latest segment had already run unseen (as after a "
        "store restored from an earlier copy) cannot be told: {}\n",
        text(c, "rerun_check"));
  fmt::print("\n  {:>3}  {:<8}  {:>9}  {:>4}  {:<19}  {:<19}  {:<19}  {}\n", "SEG", "STATE", "JOB",
             "TRY", "SUBMITTED", "STARTED", "ENDED", "NOTE");
  for (const auto& s : c.at("segment_list")) {
    std::string state = s.at("state").get<std::string>();
    if (s.at("submitting").get<bool>()) state = "submit..";
    // Queued behind its predecessor (the fallback chain), not yet released.
    if (state == "pending" && s.contains("held_behind") && !s.contains("released_at"))
      state = "held";
    // Its job left the queue unseen: whether it ran is being asked, or is up to the user.
    if (s.contains("fate_unknown_since")) state = "unknown";
    const auto job = s.at("job_id").get<long long>();
    fmt::print("  {:>3}  {:<8}  {:>9}  {:>4}  {:<19}  {:<19}  {:<19}  {}\n",
               s.at("index").get<int>(), state, job > 0 ? std::to_string(job) : "-",
               s.at("attempts").get<int>(), when(s.at("submit_time").get<Seconds>()),
               when(s.at("start_time").get<Seconds>()), when(s.at("end_time").get<Seconds>()),
               escape_control(s.value("message", std::string())));
    if (const std::string handoff = handoff_text(s); !handoff.empty())
      fmt::print("  {:>3}  hand-off: {}\n", "", handoff);
  }
  // Why, in words: when and why each segment was submitted, and how each attempt ended.
  std::map<int, const json*> segments;
  for (const auto& seg : c.at("segment_list")) segments[seg.at("index").get<int>()] = &seg;
  const json& history = c.at("submissions");
  if (!history.empty()) fmt::print("\n  history: why each segment was submitted, how it ended\n");
  for (const auto& a : history) {
    const int k = a.at("segment").get<int>(), attempt = a.at("attempt").get<int>();
    const std::string reason = a.value("reason", std::string());
    fmt::print("  segment {} attempt {}, {}: {}\n", k, attempt,
               when(a.at("intent_time").get<Seconds>()),
               reason.empty() ? "(from before reasons were kept)" : escape_control(reason));
    fmt::print("      -> {}\n", ending_text(a, segments.count(k) ? segments.at(k) : nullptr));
  }
  if (c.contains("outlook") && c.at("outlook").is_object()) {
    const json& o = c.at("outlook");
    const auto at = [&](const char* key) { return o.at(key).get<Seconds>(); };
    const std::string slurm = at("slurm_start") != kUnknownTime
                                  ? when(at("slurm_start"))
                                  : "none (" + text(o, "slurm_note") + ")";
    fmt::print("\n  next segment {}, were it submitted at {} (the predecessor ends {}):\n",
               o.at("segment").get<int>(), when(at("as_of")), when(at("predecessor_end")));
    fmt::print(
        "    starts     {} by mirage's forecast; {} at the earliest by Slurm's estimate\n",
        at("forecast_start") != kUnknownTime ? when(at("forecast_start")) : "none within 14 days",
        slurm);
    if (at("projected_finish") != kUnknownTime)
      fmt::print("    campaign   finishes {} at the earliest (no later boundary waiting)\n",
                 when(at("projected_finish")));
    if (c.contains("cluster") && c.at("cluster").is_object()) {
      // What the forecast knew: a stale time or a note saying "none" is the degraded plan.
      const json& k = c.at("cluster");
      const auto limit = [&](const char* key, const char* unit) {
        const int n = k.value(key, 0);
        return n > 0 ? fmt::format("{} {}", n, unit) : fmt::format("no {} limit", unit);
      };
      fmt::print(
          "    knowing    {} node(s) down, drained or reserved; per-user limits: {}, {} ({}), "
          "as of {}\n",
          k.value("unavailable_nodes", 0), limit("max_running_jobs_per_user", "running jobs"),
          limit("max_running_nodes_per_user", "nodes"),
          escape_control(k.value("limits_note", std::string("not read"))),
          when(k.value("as_of", Seconds{0})));
    }
  }
  // How the wait intervals stated at each submission held ([policy] wait_distribution).
  if (c.contains("waits") && c.at("waits").is_object())
    fmt::print("\n  waits      {}\n", text(c.at("waits"), "summary"));
  const json& d = c.at("decisions");
  if (!d.empty()) {
    fmt::print("\n  recent decisions\n");
    // The same decision asked again and again (a policy that waits, every decision interval) is
    // one line with its first and last time and how often.
    for (std::size_t i = 0; i < d.size();) {
      std::size_t j = i + 1;
      const auto same = [&](const json& a, const json& b) {
        return a.at("segment") == b.at("segment") && a.at("action") == b.at("action") &&
               a.at("policy") == b.at("policy");
      };
      while (j < d.size() && same(d[i], d[j])) ++j;
      const json& x = d[i];
      const std::string span =
          j - i == 1 ? when(x.at("time").get<Seconds>())
                     : fmt::format("{} to {}, {} times", when(x.at("time").get<Seconds>()),
                                   when(d[j - 1].at("time").get<Seconds>()), j - i);
      fmt::print("  {}  segment {}  {} ({})\n", span, x.at("segment").get<int>(),
                 x.at("action").get<std::string>(), text(x, "policy"));
      i = j;
    }
  }
  if (c.at("state").get<std::string>() != "active" && c.at("state").get<std::string>() != "paused")
    print_totals(c);
  return 0;
}

int run_simple(const IdOptions& o, const char* op, const char* verb) {
  int rc = 0;
  const auto reply = ask_daemon(o.where, {{"op", op}, {"id", o.id}}, rc);
  if (!reply) return rc;
  const json& c = reply->at("campaign");
  // Served on the store with slurmctld away: the campaign is cancelled, these jobs are not yet.
  for (const json& n : reply->value("not_cancelled", json::array()))
    std::cerr << fmt::format(
        "mirage: job {} not cancelled yet ({}): the next tick or daemon cancels it, or `scancel "
        "{}`\n",
        n.at("job").get<std::int64_t>(), escape_control(n.at("error").get<std::string>()),
        n.at("job").get<std::int64_t>());
  if (o.json) {
    std::cout << c.dump(2) << "\n";
    return 0;
  }
  fmt::print("campaign {} {}: now {}\n", o.id, verb, c.at("state").get<std::string>());
  return 0;
}

struct SettleOptions {
  DaemonSocketOptions where;
  std::int64_t id = 0;
  int segment = -1;
  bool ran = false;
  bool rerun = false;
  bool json = false;
};

int run_settle(const SettleOptions& o) {
  int rc = 0;
  const auto reply = ask_daemon(
      o.where, {{"op", "settle"}, {"id", o.id}, {"segment", o.segment}, {"ran", o.ran}}, rc);
  if (!reply) return rc;
  const json& c = reply->at("campaign");
  if (o.json) {
    std::cout << c.dump(2) << "\n";
    return 0;
  }
  fmt::print("campaign {} segment {}: {}; the campaign is {}\n", o.id, o.segment,
             o.ran ? "taken as run, the next segment follows" : "to be submitted again",
             c.at("state").get<std::string>());
  return 0;
}

void wrap(CLI::App* cmd, std::function<int()> f) {
  cmd->callback([f = std::move(f)] {
    const int rc = f();
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace

void register_campaign_commands(CLI::App& app) {
  CLI::App* campaign = app.add_subcommand(
      "campaign",
      "Register and watch campaigns: long runs split into Slurm jobs the daemon chains");
  campaign->require_subcommand(1);

  auto a = std::make_shared<AddOptions>();
  CLI::App* add = campaign->add_subcommand("add", "Register a campaign with the daemon");
  add->add_option("--name", a->name, "Campaign name (jobs are named NAME-s<segment>)")->required();
  add->add_option("--script", a->script,
                  "Batch script each segment runs (read now, sent whole; mirage orders the "
                  "segments, so no #SBATCH --hold or --dependency)")
      ->required()
      ->check(CLI::ExistingFile);
  add->add_option("--segments", a->segments,
                  "The most segments (Slurm jobs); without it the campaign runs until a segment "
                  "creates the file named in $MIRAGE_DONE_FILE")
      ->check(whole_number(1, 10000));
  // The shape flags override the script's #SBATCH lines, as on sbatch's command line.
  add->add_option("--nodes", a->nodes, "Nodes per segment (default: the script's #SBATCH)")
      ->check(whole_number(1));
  add->add_option("--gpus-per-node", a->gpus_per_node,
                  "GPUs per node (default: the script's --gres=gpu, --gpus-per-node or --gpus)")
      ->check(whole_number(0));
  add->add_option("--time", a->time,
                  "Each segment's time limit, as sbatch --time (2-00:00:00, 48:00:00) or 2d, 4h "
                  "(default: the script's #SBATCH --time, else the partition's)");
  add_renamed_option(*add, "--time-limit", "--time", a->time);
  add->add_option("--partition", a->partition,
                  "Partition (default: the script's, else the daemon's, else the site's)");
  add->add_option("--account", a->account,
                  "Account to charge (default: the script's, else the daemon's, else yours)");
  add->add_option("--qos", a->qos, "Quality of service (default: the script's, else yours)");
  add->add_option("--max-retries", a->max_retries,
                  "Submissions of a segment again after it failed (default: the daemon's "
                  "guard.max_retries)")
      ->check(whole_number(0, 1000));
  add->add_option("--fallback-chain", a->fallback_chain,
                  "on: keep the next segment queued behind the running one "
                  "(--dependency=afterany), released early when the policy decides, so the chain "
                  "goes on if mirage stops; off: submit it only when the policy decides (default: "
                  "the daemon's policy.fallback_chain)")
      ->check(CLI::IsMember({"on", "off"}));
  add->add_option("--max-hours", a->max_hours,
                  "The most run time of all segments together, in hours: no segment is "
                  "submitted past it (a running one counts at its whole limit)")
      ->check(number_between(1.0 / 60, 87600.0));
  add->add_option("--done-file", a->done_file,
                  "The file a segment creates to end the campaign, passed as MIRAGE_DONE_FILE "
                  "(default: one beside the daemon's store)");
  add->add_option("--policy", a->policy,
                  "When to submit the next segment: reactive, average, forecast, static, "
                  "slurm-estimate, quantile (reads the daemon's [policy] wait_distribution), or a "
                  "model file; "
                  "POLICY@LEAD, quantile@LEVEL and MODEL@THRESHOLD set its risk knob (default: "
                  "the daemon's [policy] default, compiled in as the learned agents' verdict; the "
                  "add says which and why)");
  add->add_option("--max-overlap", a->max_overlap,
                  "Instead of --policy: the most overlap per boundary you accept (e.g. 30m); "
                  "the daemon takes the policy with the least interruption within it from its "
                  "risk frontier ([policy] frontier)");
  add->add_option(
         "--overlap", a->overlap,
         "handoff: signal the predecessor once the successor starts; concurrent: let it run")
      ->check(CLI::IsMember({"handoff", "concurrent"}))
      ->capture_default_str();
  add->add_option("--handoff-grace", a->handoff_grace,
                  "Hand-off: cancel the predecessor this long after the signal if still running "
                  "(default: the daemon's [handoff] grace, 5m unless set)");
  add->add_option("--adopt", a->adopt,
                  "Take back this job, queued or running (one the daemon names as tagged by a "
                  "store that lost it), as the campaign's first segment instead of submitting one")
      ->check(whole_number(1));
  add->add_option("--request-key", a->request_key,
                  "The key of an add whose answer was lost, as the error named it: the daemon "
                  "adds at most one campaign per key, so the same command run again with it "
                  "returns the campaign already added")
      ->check(CLI::Validator(
          [](const std::string& key) -> std::string {
            const bool ok = !key.empty() && key.size() <= 64 &&
                            std::all_of(key.begin(), key.end(), [](unsigned char ch) {
                              return std::isalnum(ch) || ch == '-';
                            });
            return ok ? "" : "expected up to 64 letters, digits and '-'";
          },
          "KEY", "request key"));
  add->add_flag("--no-export-env", a->no_export,
                "Do not pass this shell's environment to the segments: they get sbatch "
                "--export=NONE's (the login environment on the node) and the MIRAGE_* "
                "variables, whatever the script's --export line (srun in the script needs "
                "SLURM_EXPORT_ENV=ALL for its steps to get the job's environment)");
  a->where.store_without_daemon = true;
  a->where.add_to(*add);
  add->add_flag("--json", a->json, "Print the new campaign as JSON");
  wrap(add, [a] { return run_add(*a); });

  auto l = std::make_shared<ListOptions>();
  CLI::App* list = campaign->add_subcommand("list", "List campaigns");
  l->where.store_without_daemon = true;
  l->where.add_to(*list);
  list->add_flag("--json", l->json, "Print JSON");
  wrap(list, [l] { return run_list(*l); });

  struct Simple {
    const char* name;
    const char* help;
    const char* verb;
  };
  for (const Simple& s :
       {Simple{"show", "Show a campaign's segments, jobs and decisions", ""},
        Simple{"cancel", "Cancel a campaign and its queued or running jobs", "cancelled"},
        Simple{"pause", "Stop submitting a campaign's segments (running jobs go on)", "paused"},
        Simple{"resume", "Resume a paused campaign", "resumed"}}) {
    auto o = std::make_shared<IdOptions>();
    CLI::App* cmd = campaign->add_subcommand(s.name, s.help);
    cmd->add_option("ID", o->id, "Campaign id (see `mirage campaign list`)")
        ->required()
        ->check(whole_number(1));
    o->where.store_without_daemon = true;
    o->where.add_to(*cmd);
    cmd->add_flag("--json", o->json, "Print JSON");
    const std::string op = s.name;
    const char* verb = s.verb;
    wrap(cmd,
         [o, op, verb] { return op == "show" ? run_show(*o) : run_simple(*o, op.c_str(), verb); });
  }

  auto st = std::make_shared<SettleOptions>();
  CLI::App* settle = campaign->add_subcommand(
      "settle",
      "Say whether a segment whose job left the queue unseen ran (mirage could not tell: no "
      "accounting, no output file); until then nothing more of its campaign is submitted");
  settle->add_option("ID", st->id, "Campaign id")->required()->check(whole_number(1));
  settle->add_option("--segment", st->segment, "The segment `campaign show` marks unknown")
      ->required()
      ->check(whole_number(0));
  auto* ran = settle->add_flag("--ran", st->ran, "It ran: go on with the next segment");
  auto* rerun = settle->add_flag("--rerun", st->rerun, "It did not run: submit it again");
  ran->excludes(rerun);
  st->where.store_without_daemon = true;
  st->where.add_to(*settle);
  settle->add_flag("--json", st->json, "Print the campaign as JSON");
  wrap(settle, [st] {
    if (st->ran == st->rerun)
      throw CLI::ValidationError("--ran/--rerun", "give one of --ran and --rerun");
    return run_settle(*st);
  });
}

}  // namespace mirage::cli
