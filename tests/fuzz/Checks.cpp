#include "Checks.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <typeinfo>

#include "mirage/core/Error.h"
#include "mirage/daemon/service/DaemonConfig.h"
#include "mirage/traces/Trace.h"
#include "mirage/traces/TraceStats.h"

namespace mirage::fuzz {
namespace {

// What every successful read promises the simulator and the statistics.
std::string broken_invariant(const Trace& t) {
  const TraceReadReport& r = t.report;
  if (t.machine_nodes < 0) return "negative machine size " + std::to_string(t.machine_nodes);
  if (r.rows != r.jobs + r.skipped_total())
    return "rows " + std::to_string(r.rows) + " != jobs " + std::to_string(r.jobs) + " + skipped " +
           std::to_string(r.skipped_total());
  if (t.jobs.size() != r.jobs) return "report.jobs differs from the jobs kept";
  for (std::size_t i = 0; i < t.jobs.size(); ++i) {
    const Job& j = t.jobs[i];
    const std::string id = "job " + std::to_string(j.id) + ": ";
    if (i > 0 && j.submit < t.jobs[i - 1].submit) return id + "not sorted by submit time";
    if (!j.started()) {  // a log without a start (SWF wait -1): the run time alone is kept
      if (j.runtime() < 0) return id + "has neither a start nor a run time";
    } else {
      if (j.start < j.submit) return id + "starts before its submit time";
      if (j.end < j.start) return id + "ends before it starts";
    }
    if (j.nodes < 1) return id + "has no nodes";
    if (j.time_limit <= 0) return id + "has no time limit";
    if (j.gpus_per_node < 0) return id + "has a negative GPU count";
  }
  return "";
}

// Longer messages quote too much of the input for a terminal or a log.
constexpr std::size_t kLongestMessage = 2048;

bool has_control_byte(const std::string& text) {
  return escape_control(text) != text;
}

}  // namespace

void check_trace(const std::string& path, const Report& report) {
  for (const bool lenient : {false, true}) {
    report(kMode, lenient ? "lenient" : "strict");
    try {
      const Trace t = read_trace(path, {TraceFormat::kAuto, lenient});
      compute_trace_stats(t);
      for (const std::string& example : t.report.examples) report(kExample, example);
      if (const std::string broken = broken_invariant(t); !broken.empty())
        report(kBroken, (lenient ? "lenient: " : "strict: ") + broken);
      report(lenient ? kReadLenient : kReadStrict, "");
    } catch (const InputError& e) {
      report(kInputError, e.what());
    } catch (const std::exception& e) {
      report(kOtherError, std::string(typeid(e).name()) + ": " + e.what());
    }
  }
}

void check_config(const std::string& path, const Report& report) {
  report(kMode, "config");
  try {
    daemon::load_daemon_config(path);
    report(kConfigLoaded, "");
  } catch (const InputError& e) {
    report(kInputError, e.what());
  } catch (const std::exception& e) {
    report(kOtherError, std::string(typeid(e).name()) + ": " + e.what());
  }
}

Rejections rejections(const Outcome& outcome) {
  Rejections r;
  bool lenient = false;
  for (const Message& m : outcome.messages) {
    if (m.tag == kMode) lenient = m.text == "lenient";
    if (m.tag == kInputError || m.tag == kOtherError) (lenient ? r.lenient : r.strict) = true;
  }
  return r;
}

std::vector<Finding> judge(const Outcome& outcome, const std::string& path, bool must_fail) {
  std::vector<Finding> out;
  if (outcome.end == Outcome::End::kTimedOut)
    out.push_back({"hang", "no result after " + std::to_string(outcome.seconds) + " s"});
  else if (outcome.end == Outcome::End::kSignalled)
    out.push_back({"crash", std::string("signal ") + std::to_string(outcome.code) + " (" +
                                strsignal(outcome.code) + ")"});
  else if (outcome.code != 0)
    out.push_back({"crash", "exit status " + std::to_string(outcome.code)});
  bool read = false;
  for (const Message& m : outcome.messages) {
    switch (m.tag) {
      case kInputError:
      case kOtherError:
      case kExample:
        if (m.text.find(path) == std::string::npos)
          out.push_back({"nameless message", escape_control(m.text)});
        if (m.text.size() > kLongestMessage)
          out.push_back({"overlong message", std::to_string(m.text.size()) + " bytes: " +
                                                 escape_control(m.text.substr(0, 200)) + "..."});
        if (has_control_byte(m.text)) out.push_back({"raw control bytes", escape_control(m.text)});
        break;
      case kBroken: out.push_back({"broken invariant", escape_control(m.text)}); break;
      case kReadStrict:
      case kReadLenient: read = true; break;
      default: break;
    }
  }
  if (must_fail && read) out.push_back({"truncation accepted", "a cut-off gzip copy was read"});
  return out;
}

}  // namespace mirage::fuzz
