#include "mirage/daemon/campaigns/EarlierRuns.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace mirage::daemon {
namespace {

// A job id no segment has, written where the pattern puts the job's: found again as "%j".
constexpr JobId kJobMarker = 7'777'777'777'777;
constexpr std::string_view kJobSlot = "%j";

bool known(const EarlierRunQuestion& q, JobId job) {
  return std::find(q.known_jobs.begin(), q.known_jobs.end(), job) != q.known_jobs.end();
}

// The job id a file `name` carries where `parts` (the pattern's file name, split at each "%j")
// leave it, the same at each; nullopt when the name is not the pattern's.
std::optional<JobId> job_in_name(std::string_view name, const std::vector<std::string>& parts) {
  std::optional<JobId> id;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (name.substr(0, parts[i].size()) != parts[i]) return std::nullopt;
    name.remove_prefix(parts[i].size());
    if (i + 1 == parts.size()) break;
    JobId v = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (ec != std::errc() || (id && *id != v)) return std::nullopt;
    id = v;
    name.remove_prefix(static_cast<std::size_t>(end - name.data()));
  }
  if (!name.empty()) return std::nullopt;
  return id.value_or(0);
}

std::optional<Seconds> written_since(const std::string& path, Seconds since) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (static_cast<Seconds>(st.st_mtime) < since) return std::nullopt;
  return static_cast<Seconds>(st.st_mtime);
}

// The segment's latest output file written since the campaign began by a job the store does not
// know. A name without the job id says nothing once the store knows a job that may have written it.
std::optional<EarlierRun> earlier_run_in_files(const EarlierRunQuestion& q, const JobTag& tag,
                                               std::string& unchecked) {
  const std::string& pattern = q.output_pattern;
  const auto slash = pattern.rfind('/');
  const std::string dir = pattern.substr(0, slash);
  const std::string file = pattern.substr(slash + 1);
  EarlierRun best;
  int found = 0;
  if (file.find(kJobSlot) == std::string::npos) {
    if (!q.known_jobs.empty()) {
      unchecked =
          "its output file " + pattern + " holds no job id, and an earlier job of it wrote it";
      return std::nullopt;
    }
    const auto written = written_since(pattern, q.since);
    if (!written) return std::nullopt;
    best.output_file = pattern;
    best.written = *written;
    found = 1;
  } else {
    if (dir.find(kJobSlot) != std::string::npos) {
      unchecked = "its output file's directory depends on the job id (" + pattern + ")";
      return std::nullopt;
    }
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
      const auto next = file.find(kJobSlot, at);
      parts.push_back(file.substr(at, next == std::string::npos ? next : next - at));
      if (next == std::string::npos) break;
      at = next + kJobSlot.size();
    }
    // increment(ec), not ++: a directory that fails part-way (NFS, Lustre) does not throw out of
    // the Slurm thread's batch; what was read still counts, and the rest is said unchecked.
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::filesystem::directory_entry& entry = *it;
      const std::string name = entry.path().filename().string();
      const auto job = job_in_name(name, parts);
      if (!job || *job == 0 || known(q, *job)) continue;
      const auto written = written_since(entry.path().string(), q.since);
      if (!written) continue;
      if (++found == 1 || *written >= best.written) {
        best.job = *job;
        best.output_file = entry.path().string();
        best.written = *written;
      }
    }
    // A directory that does not exist holds no run; one that cannot be read could.
    if (ec && ec != std::errc::no_such_file_or_directory)
      unchecked = "its output directory " + dir + " could not be read: " + ec.message();
  }
  if (found == 0) return std::nullopt;
  // Each unseen run was an attempt: the latest is the last of them.
  best.attempt = tag.attempt + found - 1;
  best.evidence = "its output file " + best.output_file + " shows it started";
  return best;
}

std::optional<EarlierRun> earlier_run_in_accounting(const EarlierRunQuestion& q, const JobTag& tag,
                                                    const std::string& name,
                                                    const std::vector<SlurmJob>& jobs) {
  const SlurmJob* tagged = nullptr;
  int tagged_attempt = 0;
  const SlurmJob* named = nullptr;
  int named_count = 0;
  for (const SlurmJob& j : jobs) {
    if (j.user_id != q.user_id) continue;
    if (const auto t = JobTag::parse(j.comment)) {
      if (t->store != tag.store || t->campaign != tag.campaign || t->segment != tag.segment ||
          t->attempt < tag.attempt)
        continue;
      if (!tagged || t->attempt > tagged_attempt ||
          (t->attempt == tagged_attempt && j.submit > tagged->submit)) {
        tagged = &j;
        tagged_attempt = t->attempt;
      }
      continue;
    }
    // No tag: the site's accounting keeps no comments, or the site rewrites them (else the
    // comment is another program's).
    if ((!j.comment.empty() && !q.comments_rewritten) || !q.name_is_unique || j.name != name ||
        j.submit < q.since || known(q, j.id))
      continue;
    ++named_count;
    if (!named || j.submit > named->submit) named = &j;
  }
  EarlierRun run;
  if (tagged) {
    run.job = tagged->id;
    run.attempt = tagged_attempt;
    run.accounted = *tagged;
    run.evidence = "accounting records job " + std::to_string(tagged->id) + " of tag " +
                   tagged->comment + " (" + std::string(to_string(tagged->state)) + ")";
    return run;
  }
  if (!named) return std::nullopt;
  run.job = named->id;
  run.attempt = tag.attempt + named_count - 1;
  run.accounted = *named;
  run.evidence = "accounting records job " + std::to_string(named->id) + " named " + name +
                 " submitted after the campaign began (" + std::string(to_string(named->state)) +
                 ")";
  return run;
}

}  // namespace

EarlierRunAnswer find_earlier_run(const EarlierRunQuestion& q, const JobTag& tag,
                                  const std::string& name,
                                  const std::optional<std::vector<SlurmJob>>& accounted,
                                  const std::string& why) {
  EarlierRunAnswer out;
  if (accounted) {
    out.run = earlier_run_in_accounting(q, tag, name, *accounted);
    return out;
  }
  if (q.output_pattern.empty()) {
    out.unchecked = why + "; its output file does not name the segment (no %x in it)";
    return out;
  }
  std::string unchecked;
  out.run = earlier_run_in_files(q, tag, unchecked);
  if (!unchecked.empty()) out.unchecked = why + "; " + unchecked;
  return out;
}

std::string segment_output_pattern(
    const std::string& name, const std::function<std::string(JobId, const std::string&)>& expand) {
  const std::string path = expand(kJobMarker, name);
  if (path.empty() || path == expand(kJobMarker, name + "-another")) return {};
  const std::string marker = std::to_string(kJobMarker);
  std::string out;
  for (std::size_t at = 0;;) {
    const auto next = path.find(marker, at);
    out += path.substr(at, next == std::string::npos ? next : next - at);
    if (next == std::string::npos) return out;
    out += kJobSlot;
    at = next + marker.size();
  }
}

}  // namespace mirage::daemon
