#include "mirage/daemon/slurm/SacctLookup.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <vector>

#include "mirage/daemon/slurm/ChildProcess.h"
#include "mirage/daemon/slurm/SbatchSubmitter.h"

namespace mirage::daemon {
namespace {

// sacct's words when there is no accounting to ask: an answer (the fate stays unknown), not a
// failure to retry soon.
constexpr const char* kNoAccounting[] = {
    "accounting storage is disabled",
    "Slurm accounting storage is disabled",
    "accounting_storage/none",
};

std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (true) {
    const auto next = line.find(sep, at);
    out.push_back(line.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

// A time as SLURM_TIME_FORMAT=%s prints it; "Unknown", "None" or empty: none.
Seconds parse_time(std::string_view text) {
  Seconds t = 0;
  return parse_number(text, t) && t > 0 ? t : kUnknownTime;
}

// sacct's State column: "COMPLETED", "CANCELLED by 1000", "OUT_OF_MEMORY", ...
std::optional<SlurmJobState> parse_state(std::string_view text) {
  const std::string_view word = text.substr(0, text.find(' '));
  struct Name {
    std::string_view name;
    SlurmJobState state;
  };
  static constexpr Name kNames[] = {
      {"PENDING", SlurmJobState::kPending},
      {"REQUEUED", SlurmJobState::kPending},
      {"RUNNING", SlurmJobState::kRunning},
      {"SUSPENDED", SlurmJobState::kSuspended},
      {"RESIZING", SlurmJobState::kRunning},
      {"REVOKED", SlurmJobState::kCancelled},
      {"COMPLETED", SlurmJobState::kCompleted},
      {"CANCELLED", SlurmJobState::kCancelled},
      {"FAILED", SlurmJobState::kFailed},
      {"TIMEOUT", SlurmJobState::kTimeout},
      {"NODE_FAIL", SlurmJobState::kNodeFail},
      {"PREEMPTED", SlurmJobState::kPreempted},
      {"BOOT_FAIL", SlurmJobState::kBootFail},
      {"DEADLINE", SlurmJobState::kDeadline},
      {"OUT_OF_MEMORY", SlurmJobState::kOutOfMemory},
  };
  for (const auto& n : kNames)
    if (n.name == word) return n.state;
  return std::nullopt;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

}  // namespace

std::string find_sacct(const std::string& sbatch, const std::string& search_path) {
  if (const auto slash = sbatch.rfind('/'); slash != std::string::npos) {
    const std::string beside = sbatch.substr(0, slash + 1) + "sacct";
    if (executable_file(beside)) return beside;
  }
  return find_on_path("sacct", search_path);
}

std::optional<SlurmJob> parse_sacct_line(std::string_view line, std::string* why) {
  auto fail = [&](const std::string& what) -> std::optional<SlurmJob> {
    if (why) *why = what;
    return std::nullopt;
  };
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  const auto f = split(line, '|');
  if (f.size() < 7)
    return fail("expected 7 fields (JobIDRaw|UID|State|Submit|Start|End|ExitCode), got " +
                std::to_string(f.size()));
  SlurmJob job;
  if (!parse_number(f[0], job.id) || job.id <= 0)
    return fail("expected a job id, got '" + std::string(f[0]) + "'");
  if (!parse_number(f[1], job.user_id))
    return fail("expected a uid, got '" + std::string(f[1]) + "'");
  const auto state = parse_state(f[2]);
  if (!state) return fail("unknown job state '" + std::string(f[2]) + "'");
  job.state = *state;
  job.submit = parse_time(f[3]);
  job.start = parse_time(f[4]);
  job.end = is_finished(job.state) ? parse_time(f[5]) : kUnknownTime;
  // Accounting gives a job cancelled while pending its cancel time as start: it never started.
  if (job.state == SlurmJobState::kCancelled && job.start != kUnknownTime && job.start == job.end)
    job.start = kUnknownTime;
  const auto codes = split(f[6], ':');  // "exit:signal"
  if (codes.size() == 2) {
    parse_number(codes[0], job.exit_code);
    parse_number(codes[1], job.exit_signal);
  }
  // JobName and Comment, where asked for; the comment is the rest of the line (it may hold '|').
  if (f.size() >= 8) job.name = std::string(f[7]);
  if (f.size() >= 9) {
    const std::size_t from = static_cast<std::size_t>(f[8].data() - line.data());
    job.comment = std::string(line.substr(from));
  }
  return job;
}

namespace {

// What sacct printed, or why there is nothing to read: no accounting here (`why`, an answer).
// Throws a transient SlurmError when it timed out or slurmdbd did not answer.
struct SacctOutput {
  std::optional<std::string> out;
  std::string why;
};

SacctOutput run_sacct(const SacctSettings& settings, std::vector<std::string> args) {
  if (settings.program.empty()) return {std::nullopt, "no sacct on this machine"};
  ChildProcessSpec spec;
  spec.program = settings.program;
  spec.args = {"-X", "-n", "-P"};
  spec.args.insert(spec.args.end(), args.begin(), args.end());
  spec.environment = {"SLURM_TIME_FORMAT=%s", "TZ=UTC"};
  if (!settings.slurm_conf.empty()) spec.environment.push_back("SLURM_CONF=" + settings.slurm_conf);
  // What a site's install of the client may need to run at all.
  for (const char* name : {"HOME", "PATH", "LD_LIBRARY_PATH"})
    if (const char* v = std::getenv(name)) spec.environment.push_back(std::string(name) + "=" + v);
  spec.timeout = std::chrono::seconds(settings.timeout);
  const ChildProcessResult res = run_child_process(spec);
  const std::string who = "sacct (" + settings.program + ")";
  if (res.start_errno != 0)
    return {std::nullopt, "cannot run " + who + ": " + std::strerror(res.start_errno)};
  if (res.timed_out)
    throw SlurmError(who + " did not answer within " + format_short_duration(settings.timeout),
                     ETIMEDOUT, true);
  if (res.exit_code != 0) {
    const std::string err = first_line(res.err.empty() ? res.out : res.err);
    for (const char* words : kNoAccounting)
      if (err.find(words) != std::string::npos)
        return {std::nullopt, "this cluster keeps no accounting (" + err + ")"};
    throw SlurmError(
        who + " failed: " + (err.empty() ? "exit status " + std::to_string(res.exit_code) : err),
        res.exit_code, true);
  }
  return {res.out, {}};
}

// Every record sacct printed; nullopt, with `why`, at the first line that does not parse.
std::optional<std::vector<SlurmJob>> parse_sacct_output(const std::string& out,
                                                        const SacctSettings& settings,
                                                        std::string& why) {
  std::vector<SlurmJob> jobs;
  std::size_t at = 0;
  while (at < out.size()) {
    auto nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    const std::string_view line(out.data() + at, nl - at);
    at = nl + 1;
    if (line.find_first_not_of(" \r") == std::string_view::npos) continue;
    std::string bad;
    auto parsed = parse_sacct_line(line, &bad);
    if (!parsed) {
      why = "sacct (" + settings.program + ") printed a line mirage cannot read (" + bad + ")";
      return std::nullopt;
    }
    jobs.push_back(std::move(*parsed));
  }
  return jobs;
}

constexpr const char* kFields = "JobIDRaw,UID,State,Submit,Start,End,ExitCode";
// The same with the job's name and comment (the comment last: it is the user's text).
constexpr const char* kNamedFields = "JobIDRaw,UID,State,Submit,Start,End,ExitCode,JobName,Comment";

// sacct's -S: a time as "2026-11-28T01:02:03", read in the child's TZ (UTC).
std::string sacct_time(Seconds t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::map<JobId, AccountedJob> lookup_accounted_jobs(const SacctSettings& settings,
                                                    const std::vector<JobId>& jobs) {
  std::map<JobId, AccountedJob> out;
  if (jobs.empty()) return out;
  std::string ids;
  for (JobId job : jobs) ids += (ids.empty() ? "" : ",") + std::to_string(job);
  // -D: every record of the id, the segment's among them, whose name and comment tell it.
  const SacctOutput res = run_sacct(settings, {"-D", "-j", ids, "-o", kNamedFields});
  std::string why = res.why;
  const auto records = res.out ? parse_sacct_output(*res.out, settings, why) : std::nullopt;
  for (JobId job : jobs) {
    if (!records) {
      out[job] = {{}, why};
      continue;
    }
    AccountedJob& answer = out[job];
    std::copy_if(records->begin(), records->end(), std::back_inserter(answer.records),
                 [job](const SlurmJob& j) { return j.id == job; });
    if (answer.records.empty())
      answer.why = "accounting has no record of job " + std::to_string(job);
  }
  return out;
}

AccountedJobs search_accounted_jobs(const SacctSettings& settings, const AccountingSearch& search) {
  std::vector<std::string> args = {"-S", sacct_time(search.since), "-E", "now", "-o", kNamedFields};
  // sacct's --name takes a comma-separated list: a name with a comma in it is matched here.
  const bool listable = std::none_of(search.names.begin(), search.names.end(), [](const auto& n) {
    return n.empty() || n.find(',') != std::string::npos;
  });
  if (listable && !search.names.empty()) {
    std::string names;
    for (const auto& n : search.names) names += (names.empty() ? "" : ",") + n;
    args.push_back("--name=" + names);
  }
  const SacctOutput res = run_sacct(settings, std::move(args));
  if (!res.out) return {std::nullopt, res.why};
  std::string why;
  auto jobs = parse_sacct_output(*res.out, settings, why);
  if (!jobs) return {std::nullopt, why};
  std::erase_if(*jobs, [&](const SlurmJob& j) {
    return std::find(search.names.begin(), search.names.end(), j.name) == search.names.end();
  });
  return {std::move(jobs), {}};
}

}  // namespace mirage::daemon
