#include "mirage/daemon/slurm/SbatchSubmitter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "mirage/daemon/slurm/BatchScriptDirectives.h"
#include "mirage/daemon/slurm/ChildProcess.h"
#include "mirage/daemon/slurm/JobEnvironment.h"

namespace mirage::daemon {
namespace {

// sbatch's messages when the controller did not answer: whether the job exists is unknown, and
// the tag in a later dump settles it.
constexpr const char* kNoAnswer[] = {
    "Socket timed out",
    "Unable to contact slurm controller",
    "Zero Bytes were transmitted or received",
    "Communication connection failure",
    "Connection refused",
    "Connection timed out",
    "Connection reset",
    "Transport endpoint is not connected",
    "in standby mode",
    // SLURM_COMMUNICATIONS_SEND_ERROR, _RECEIVE_ERROR and SLURM_PROTOCOL_INSANE_MSG_LENGTH:
    // 1000-1899, the codes slurm_error_is_transient takes for a lost reply.
    "Message send failure",
    "Message receive failure",
    "Insane message length",
};

// sbatch's refusals that last only a while, as the last line says them ("Batch job submission
// failed: " and slurm_strerror's text, src/common/slurm_errno.c, alike in 22.05 and 24.11).
// Nothing was made: the same request is taken once the load or the user's jobs go down.
constexpr const char* kRefusedForNow[] = {
    // EAGAIN, after sbatch's own 15 tries ("Slurm temporarily unable to accept job, sleeping and
    // retrying", src/sbatch/sbatch.c of 22.05 and 24.11).
    "Resource temporarily unavailable",
    // ESLURM_ERROR_ON_DESC_TO_RECORD_COPY (MaxJobCount reached), after "Slurm job queue full,
    // sleeping and retrying".
    "Unable to create job record, try again",
    // ESLURM_NODES_BUSY (22.05, 24.11) and ESLURM_PORTS_BUSY (retried by 24.11's sbatch), after
    // "Job creation temporarily disabled, retrying".
    "Requested nodes are busy",
    "Required ports are in use",
    // ESLURM_SUBMISSIONS_DISABLED: an administrator holds all submissions.
    "System submissions disabled",
    // ESLURM_PARTITION_NOT_AVAIL: an administrator drains the partition (or makes it inactive)
    // for maintenance; submissions are taken again once it is up.
    "Required partition not available (inactive or drain)",
};

// Why sbatch could not be started, when it passes of itself: no processes, memory or
// descriptors to spare (fork, the pipes), sbatch being replaced as it is run (a package
// update: ETXTBSY), an NFS working directory not answering. Nothing was submitted. Any other
// (ENOENT, ENOTDIR, EACCES) lasts until someone changes the file system: a refusal.
constexpr int kStartFailsForNow[] = {EAGAIN,  ENOMEM, EMFILE,    ENFILE,
                                     ETXTBSY, ESTALE, ETIMEDOUT, EIO};

// ESLURM_ACCOUNTING_POLICY ("Job violates accounting/QOS policy (job submit limit, user's size
// and/or time limits)", 22.05 and 24.11) is a submit limit or a size or time limit alike:
// slurmctld says which on the line before it, by the limit's reason (src/common/
// job_state_reason.c in 24.11, slurm_protocol_defs.c in 22.05; the same names). Only a submit
// limit lasts just until some of the user's jobs end.
constexpr const char* kAccountingPolicy = "Job violates accounting/QOS policy";
constexpr const char* kSubmitLimitReasons[] = {
    "QOSMaxSubmitJobPerUserLimit", "QOSGrpSubmitJobsLimit",   "AssocMaxSubmitJobLimit",
    "AssocGrpSubmitJobsLimit",     "MaxSubmitJobsPerAccount",
};

bool any_in(const std::string& text, const auto& patterns) {
  for (const char* p : patterns)
    if (text.find(p) != std::string::npos) return true;
  return false;
}

// sbatch's standard error's non-empty lines, trimmed.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    at = nl + 1;
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    lines.push_back(line.substr(b, line.find_last_not_of(" \t\r") - b + 1));
  }
  return lines;
}

// Read off the refusal's own line, the last (and the limit's reason off the line before it): a
// warning earlier in the output that names the same words says nothing of the refusal.
bool refused_for_now(const std::string& err) {
  const auto lines = lines_of(err);
  if (lines.empty()) return false;
  const std::string& last = lines.back();
  const std::string before = lines.size() > 1 ? lines[lines.size() - 2] : std::string();
  return any_in(last, kRefusedForNow) || (last.find(kAccountingPolicy) != std::string::npos &&
                                          any_in(before + "\n" + last, kSubmitLimitReasons));
}

// sbatch's standard error as one line: its lines, trimmed, joined.
std::string one_line(const std::string& text) {
  std::string out;
  for (const std::string& line : lines_of(text)) out += (out.empty() ? "" : "; ") + line;
  return out.size() > 1000 ? out.substr(0, 1000) + "..." : out;
}

// "1234" or "1234;cluster" on the last line of --parsable output.
std::optional<JobId> parse_job_id(const std::string& out) {
  const auto end = out.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return std::nullopt;
  const auto start = out.find_last_of('\n', end);
  const std::string line = out.substr(start == std::string::npos ? 0 : start + 1,
                                      end + 1 - (start == std::string::npos ? 0 : start + 1));
  const std::string digits = line.substr(0, line.find(';'));
  JobId id = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || p != digits.data() + digits.size() || id <= 0) return std::nullopt;
  return id;
}

// The sbatch input variables that set the job's shape or cluster, which the daemon recorded
// without them: sbatch runs without those of a campaign stored before `campaign add` refused them.
bool overrides_the_recorded_job(std::string_view entry) {
  return entry.rfind("SBATCH_", 0) == 0 || entry.rfind("SLURM_CLUSTERS=", 0) == 0;
}

}  // namespace

bool is_sbatch_input_variable(std::string_view entry) {
  return overrides_the_recorded_job(entry) || entry.rfind("SLURM_HINT=", 0) == 0;
}

std::string slurm_umask_entry(unsigned umask) {
  // As sbatch's _set_umask_env: "0%d%d%d".
  std::string digits = "0000";
  for (int i = 0; i < 3; ++i) digits[3 - i] = static_cast<char>('0' + ((umask >> (3 * i)) & 07));
  return "SLURM_UMASK=" + digits;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string find_on_path(const std::string& program, const std::string& search_path) {
  std::size_t at = 0;
  while (at <= search_path.size()) {
    auto colon = search_path.find(':', at);
    if (colon == std::string::npos) colon = search_path.size();
    const std::string dir = search_path.substr(at, colon - at);
    at = colon + 1;
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + program;
    if (executable_file(candidate)) return candidate;
  }
  return {};
}

std::string find_sbatch(const std::string& configured, const std::string& search_path) {
  if (!configured.empty()) {
    if (::access(configured.c_str(), F_OK) != 0)
      throw std::runtime_error(configured + " does not exist");
    if (!executable_file(configured))
      throw std::runtime_error(configured + " is not an executable file");
    return configured;
  }
  std::string found = find_on_path("sbatch", search_path);
  if (found.empty())
    throw std::runtime_error("no sbatch on $PATH (" + search_path +
                             "); install Slurm's client commands or name it in cluster.sbatch");
  return found;
}

std::vector<std::string> SbatchSubmitter::arguments(const SubmitRequest& r) {
  // --ignore-pbs: sbatch would also apply the script's #PBS and #BSUB lines (a job array, a
  // hold, a dependency), which mirage does not read; `campaign add` names them.
  std::vector<std::string> args{"--parsable"};
  if (r.ignore_pbs) args.push_back("--ignore-pbs");
  if (!r.name.empty()) args.push_back("--job-name=" + r.name);
  args.push_back("--comment=" + r.comment);
  // The command line's --export (`campaign add --no-export-env`) replaces the script's, as in
  // sbatch; either is said once, with the segment's MIRAGE_* names beside it.
  std::string asked;
  if (const auto script = read_batch_directives(r.script, "the script"); script.export_env)
    asked = script.export_env->value;
  for (const auto& o : r.options)
    if (o.rfind("--export=", 0) == 0) asked = o.substr(9);
  args.push_back("--export=" + export_value(asked, r.environment));
  for (const auto& o : r.options)
    if (o.rfind("--export=", 0) != 0) args.push_back(o);
  // Last, so that it wins over a --dependency the user gave (the chain is mirage's to keep).
  if (r.after_any > 0) args.push_back("--dependency=afterany:" + std::to_string(r.after_any));
  return args;
}

JobId SbatchSubmitter::submit(const SubmitRequest& r) const {
  ChildProcessSpec spec;
  spec.program = settings_.program;
  spec.args = arguments(r);
  spec.work_dir = r.work_dir.empty() ? "/tmp" : r.work_dir;
  spec.input = r.script;
  spec.timeout = std::chrono::seconds(settings_.timeout);
  // SLURM_HINT (refused at add) is kept: a campaign stored with it keeps its layout.
  for (const auto& e : r.environment)
    if (!overrides_the_recorded_job(e) &&
        (settings_.slurm_conf.empty() || e.rfind("SLURM_CONF=", 0) != 0))
      spec.environment.push_back(e);
  if (!settings_.slurm_conf.empty())
    spec.environment.push_back("SLURM_CONF=" + settings_.slurm_conf);

  const ChildProcessResult res = run_child_process(spec);
  const std::string who = "sbatch (" + settings_.program + ")";
  if (res.start_errno != 0) {
    const std::string why = std::strerror(res.start_errno);
    const bool for_now = std::find(std::begin(kStartFailsForNow), std::end(kStartFailsForNow),
                                   res.start_errno) != std::end(kStartFailsForNow);
    throw SlurmError(res.chdir_failed ? "cannot submit from " + spec.work_dir + ": " + why
                                      : "cannot run " + who + ": " + why,
                     res.start_errno, false, for_now);
  }
  if (res.timed_out)
    throw SlurmError(who + " did not finish within " + format_short_duration(settings_.timeout) +
                         " and was killed; whether the job exists is settled by its tag",
                     ETIMEDOUT, true);
  if (res.exit_code < 0)
    throw SlurmError(who +
                         (res.signal ? " was killed by signal " + std::to_string(res.signal)
                                     : std::string(" ended in an unknown way")) +
                         "; whether the job exists is settled by its tag",
                     EINTR, true);
  const std::string err = one_line(res.err);
  if (res.exit_code == 0) {
    if (const auto id = parse_job_id(res.out)) return *id;
    throw SlurmError(who + " succeeded but printed no job id ('" + one_line(res.out) +
                         "'); whether the job exists is settled by its tag",
                     EPROTO, true);
  }
  if (err.empty())
    throw SlurmError(who + " exited with status " + std::to_string(res.exit_code), res.exit_code,
                     false);
  const bool no_answer = any_in(err, kNoAnswer);
  throw SlurmError(err, res.exit_code, no_answer, !no_answer && refused_for_now(res.err));
}

}  // namespace mirage::daemon
