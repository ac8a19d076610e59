#include "Validation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "mirage/core/Error.h"

namespace mirage::validation {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    std::size_t next = s.find(sep, pos);
    out.push_back(trim(s.substr(pos, next == std::string_view::npos ? next : next - pos)));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return out;
}

long long to_int(std::string_view text, const SourceLocation& where) {
  std::string s(trim(text));
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size())
    throw InputError(where, "expected an integer, got '" + s + "'");
  return v;
}

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  return in;
}

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError({path, 0, ""}, "cannot create file");
  return out;
}

// Reads a CSV with a header line; '#' lines and blank lines are skipped. Calls row(fields, line)
// for each data line after checking the column count against the expected header.
template <typename RowFn>
void read_csv(const std::string& path, const std::vector<std::string_view>& header, RowFn row) {
  std::ifstream in = open_input(path);
  std::string line;
  long line_no = 0;
  bool seen_header = false;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    auto fields = split(text, ',');
    if (!seen_header) {
      if (fields.size() < header.size() ||
          !std::equal(header.begin(), header.end(), fields.begin())) {
        std::string want;
        for (auto h : header) want += (want.empty() ? "" : ",") + std::string(h);
        throw InputError({path, line_no, ""}, "expected the header '" + want + "'");
      }
      seen_header = true;
      continue;
    }
    if (fields.size() < header.size())
      throw InputError({path, line_no, ""}, "expected " + std::to_string(header.size()) +
                                                " fields, got " + std::to_string(fields.size()));
    row(fields, line_no);
  }
  if (!seen_header) throw InputError({path, 0, ""}, "empty file: no header line");
}

double percentile_nearest_rank(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

std::vector<WorkloadJob> cut_workload(const std::vector<Job>& trace, const CutOptions& options,
                                      CutReport* report) {
  if (options.compress <= 0) throw InputError({"", 0, "compress"}, "must be positive");
  if (options.max_nodes < 1) throw InputError({"", 0, "max_nodes"}, "must be at least 1");
  if (options.min_runtime < 1 || options.max_runtime < options.min_runtime)
    throw InputError({"", 0, "max_runtime"}, "need 1 <= min_runtime <= max_runtime");
  CutReport local;
  CutReport& r = report ? *report : local;
  r = CutReport{};
  r.trace_jobs = trace.size();

  std::vector<WorkloadJob> out;
  Seconds first = kUnknownTime;
  for (const Job& job : trace) {
    if (out.size() == options.jobs) break;
    if (job.submit < options.from) continue;
    // Only jobs that ran say how long they run; their time limit is what backfill plans with.
    if (!job.started()) {
      ++r.skipped["never started"];
      continue;
    }
    if (job.runtime() == kUnknownTime || job.runtime() < 0) {
      ++r.skipped["no end time"];
      continue;
    }
    if (job.time_limit <= 0) {
      ++r.skipped["no time limit"];
      continue;
    }
    if (job.nodes < 1) {
      ++r.skipped["no node count"];
      continue;
    }
    if (first == kUnknownTime) first = job.submit;
    const double x = options.compress;
    WorkloadJob w;
    w.id = static_cast<int>(out.size());
    w.trace_id = job.id;
    w.submit_offset = std::llround(static_cast<double>(job.submit - first) / x);
    w.nodes = std::min(job.nodes, options.max_nodes);
    if (job.nodes > options.max_nodes) ++r.nodes_clipped;
    // sbatch -t takes whole minutes: round the compressed limit up, at least one minute.
    auto minutes = static_cast<Seconds>(std::ceil(static_cast<double>(job.time_limit) / x / 60.0));
    w.limit = std::max<Seconds>(1, minutes) * kMinute;
    // A job ends at min(runtime, limit) in the trace; keep runtime < limit after compression.
    const Seconds real_run = std::min(job.runtime(), job.time_limit);
    Seconds run = std::llround(static_cast<double>(real_run) / x);
    const Seconds ceiling = std::min(options.max_runtime, w.limit - options.limit_margin);
    if (run < options.min_runtime) {
      run = options.min_runtime;
      ++r.runtime_floored;
    } else if (run > ceiling) {
      run = ceiling;
      ++r.runtime_capped;
    }
    w.runtime = run;
    out.push_back(w);
    r.last_submit = job.submit;
  }
  r.first_submit = first == kUnknownTime ? 0 : first;
  if (out.size() < options.jobs)
    throw InputError({"", 0, "jobs"}, "the trace has only " + std::to_string(out.size()) +
                                          " usable jobs from the requested start, " +
                                          std::to_string(options.jobs) + " wanted");
  return out;
}

void write_workload_csv(const std::string& path, const std::vector<WorkloadJob>& jobs,
                        const std::vector<std::string>& comments) {
  std::ofstream out = open_output(path);
  for (const auto& c : comments) out << "# " << c << "\n";
  out << "id,submit_offset_s,nodes,limit_s,runtime_s,trace_id\n";
  for (const auto& j : jobs)
    out << j.id << ',' << j.submit_offset << ',' << j.nodes << ',' << j.limit << ',' << j.runtime
        << ',' << j.trace_id << "\n";
  if (!out) throw InputError({path, 0, ""}, "write failed");
}

std::vector<WorkloadJob> read_workload_csv(const std::string& path) {
  std::vector<WorkloadJob> jobs;
  read_csv(path, {"id", "submit_offset_s", "nodes", "limit_s", "runtime_s"},
           [&](const std::vector<std::string_view>& f, long line) {
             auto at = [&](const char* field) { return SourceLocation{path, line, field}; };
             WorkloadJob j;
             j.id = static_cast<int>(to_int(f[0], at("id")));
             j.submit_offset = to_int(f[1], at("submit_offset_s"));
             j.nodes = static_cast<int>(to_int(f[2], at("nodes")));
             j.limit = to_int(f[3], at("limit_s"));
             j.runtime = to_int(f[4], at("runtime_s"));
             if (f.size() > 5 && !f[5].empty()) j.trace_id = to_int(f[5], at("trace_id"));
             if (j.id != static_cast<int>(jobs.size()))
               throw InputError(at("id"),
                                "ids must be 0, 1, 2, ... in order; got " + std::to_string(j.id));
             if (j.nodes < 1) throw InputError(at("nodes"), "must be at least 1");
             if (j.limit < kMinute || j.limit % kMinute != 0)
               throw InputError(at("limit_s"), "must be whole minutes (Slurm's -t)");
             if (j.runtime < 1 || j.runtime > j.limit)
               throw InputError(at("runtime_s"), "must be in [1, limit_s]");
             if (!jobs.empty() && j.submit_offset < jobs.back().submit_offset)
               throw InputError(at("submit_offset_s"), "jobs must be in submit order");
             jobs.push_back(j);
           });
  return jobs;
}

std::vector<RealJob> read_jobcomp(const std::string& path, Seconds t0,
                                  const std::vector<WorkloadJob>& workload) {
  std::ifstream in = open_input(path);
  std::vector<RealJob> found(workload.size());
  std::vector<bool> seen(workload.size(), false);
  std::string line;
  long line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::map<std::string, std::string> kv;
    std::istringstream tokens(line);
    std::string tok;
    while (tokens >> tok) {
      auto eq = tok.find('=');
      if (eq != std::string::npos && !kv.count(tok.substr(0, eq)))
        kv.emplace(tok.substr(0, eq), tok.substr(eq + 1));
    }
    // 22.05 writes "Name="; some versions and tools say "JobName=".
    std::string name = kv.count("Name") ? kv["Name"] : kv["JobName"];
    if (name.size() < 2 || name[0] != 'v' ||
        !std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(c); }))
      continue;  // not a job of the workload
    const long id = std::stol(name.substr(1));
    if (id < 0 || id >= static_cast<long>(workload.size())) continue;
    auto time_of = [&](const char* key) {
      auto t = parse_iso_time(kv[key]);
      if (!t)
        throw InputError({path, line_no, key},
                         "job " + name + ": expected a time, got '" + kv[key] + "'");
      return *t - t0;
    };
    RealJob r;
    r.id = static_cast<int>(id);
    r.slurm_id = kv.count("JobId") ? std::stol(kv["JobId"]) : 0;
    r.submit = time_of("SubmitTime");
    r.start = time_of("StartTime");
    r.end = time_of("EndTime");
    r.state = kv["JobState"];
    if (seen[id])
      throw InputError({path, line_no, "Name"}, "job " + name + " is recorded twice (requeued?)");
    seen[id] = true;
    found[id] = r;
  }
  std::string missing;
  std::size_t n_missing = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i]) continue;
    if (++n_missing <= 10) missing += " v" + std::to_string(i);
  }
  if (n_missing > 0)
    throw InputError({path, 0, ""}, std::to_string(n_missing) +
                                        " workload jobs have no jobcomp record:" + missing +
                                        (n_missing > 10 ? " ..." : ""));
  return found;
}

void write_real_csv(const std::string& path, const std::vector<RealJob>& jobs) {
  std::ofstream out = open_output(path);
  out << "id,slurm_id,submit_s,start_s,end_s,state\n";
  for (const auto& j : jobs)
    out << j.id << ',' << j.slurm_id << ',' << j.submit << ',' << j.start << ',' << j.end << ','
        << j.state << "\n";
  if (!out) throw InputError({path, 0, ""}, "write failed");
}

std::vector<RealJob> read_real_csv(const std::string& path) {
  std::vector<RealJob> jobs;
  read_csv(path, {"id", "slurm_id", "submit_s", "start_s", "end_s", "state"},
           [&](const std::vector<std::string_view>& f, long line) {
             auto at = [&](const char* field) { return SourceLocation{path, line, field}; };
             RealJob j;
             j.id = static_cast<int>(to_int(f[0], at("id")));
             j.slurm_id = static_cast<long>(to_int(f[1], at("slurm_id")));
             j.submit = to_int(f[2], at("submit_s"));
             j.start = to_int(f[3], at("start_s"));
             j.end = to_int(f[4], at("end_s"));
             j.state = std::string(f[5]);
             if (j.id != static_cast<int>(jobs.size()))
               throw InputError(at("id"), "ids must be 0, 1, 2, ... in order");
             jobs.push_back(j);
           });
  return jobs;
}

Agreement compare_starts(const std::vector<RealJob>& real, const std::vector<SimOutcome>& sim,
                         Seconds tie_window) {
  Agreement a;
  a.jobs = real.size();
  if (sim.size() != real.size())
    throw std::invalid_argument("compare_starts: simulated and real job counts differ");
  std::vector<double> abs_err;
  double signed_sum = 0, wait_real = 0, wait_sim = 0;
  for (std::size_t i = 0; i < real.size(); ++i) {
    if (sim[i].start == kUnknownTime)
      throw std::invalid_argument("compare_starts: job v" + std::to_string(real[i].id) +
                                  " never started in the simulator");
    const double e = static_cast<double>(sim[i].start - real[i].start);
    abs_err.push_back(std::abs(e));
    signed_sum += e;
    wait_real += static_cast<double>(real[i].start - real[i].submit);
    wait_sim += static_cast<double>(sim[i].start - sim[i].submit);
    a.makespan_real = std::max(a.makespan_real, real[i].end);
    a.makespan_sim = std::max(a.makespan_sim, sim[i].end);
  }
  if (!real.empty()) {
    const auto n = static_cast<double>(real.size());
    a.mean_abs_error = std::accumulate(abs_err.begin(), abs_err.end(), 0.0) / n;
    a.mean_error = signed_sum / n;
    a.mean_wait_real = wait_real / n;
    a.mean_wait_sim = wait_sim / n;
    a.median_abs_error = median(abs_err);
    a.p90_abs_error = percentile_nearest_rank(abs_err, 0.9);
    a.max_abs_error = *std::max_element(abs_err.begin(), abs_err.end());
  }
  double agree = 0;
  for (std::size_t i = 0; i < real.size(); ++i) {
    for (std::size_t j = i + 1; j < real.size(); ++j) {
      const Seconds dr = real[i].start - real[j].start;
      if (std::abs(dr) <= tie_window) continue;
      ++a.pairs;
      const Seconds ds = sim[i].start - sim[j].start;
      if (ds == 0) {
        agree += 0.5;
      } else if ((ds > 0) == (dr > 0)) {
        agree += 1;
      }
    }
  }
  a.order_agreement = a.pairs ? agree / static_cast<double>(a.pairs) : 1.0;
  return a;
}

}  // namespace mirage::validation
