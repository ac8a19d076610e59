#include "mirage/daemon/control/ControlProtocol.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "mirage/core/Error.h"
#include "mirage/core/Version.h"
#include "mirage/daemon/control/ControlServer.h"
#include "mirage/daemon/slurm/BatchScriptDirectives.h"
#include "mirage/daemon/store/StoreHome.h"
#include "mirage/daemon/store/TraceExport.h"
#include "store/Sqlite.h"

namespace mirage::daemon {
namespace {

using json = nlohmann::json;

std::string type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

[[noreturn]] void bad(const std::string& key, const std::string& what) {
  throw RequestError(key + ": " + what);
}

void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : obj.items())
    if (!allowed.count(k)) {
      std::string known;
      for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
      bad(where + k, "unknown key (expected: " + known + ")");
    }
}

std::string get_string(const json& obj, const std::string& key, const std::string& where,
                       std::size_t max = 1 << 20) {
  const json& v = obj.at(key);
  if (!v.is_string()) bad(where + key, "expected a string, got " + type_of(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max) bad(where + key, "longer than " + std::to_string(max) + " bytes");
  return s;
}

// Names and other short fields end up on terminals and in logs; the script and paths may hold
// anything a file may.
std::string get_text(const json& obj, const std::string& key, const std::string& where,
                     std::size_t max) {
  std::string s = get_string(obj, key, where, max);
  if (has_control(s))
    bad(where + key, "contains control characters (\"" + escape_control(s.substr(0, 200)) +
                         "\"); use printable text");
  return s;
}

// An integer beyond int64 (nlohmann reads it as unsigned) is out of range, not negative.
long long get_int(const json& obj, const std::string& key, const std::string& where, long long lo,
                  long long hi) {
  const json& v = obj.at(key);
  if (!v.is_number_integer()) bad(where + key, "expected an integer, got " + type_of(v));
  const bool huge = v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX;
  const long long x = huge ? INT64_MAX : v.get<long long>();
  if (huge || x < lo || x > hi)
    bad(where + key,
        "expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v.dump());
  return x;
}

// Seconds or a duration string, from `lo` to `hi` seconds.
Seconds get_duration(const json& obj, const std::string& key, const std::string& where, Seconds lo,
                     Seconds hi) {
  const json& v = obj.at(key);
  const std::string range = format_short_duration(lo) + " to " + format_short_duration(hi);
  std::optional<Seconds> d;
  if (v.is_number_integer()) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() <= INT64_MAX) d = v.get<long long>();
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    d = parse_duration(s);
    if (!d)
      bad(where + key,
          "expected a duration such as \"2d\", \"48:00:00\", \"2-00:00:00\" or \"30m\", from " +
              range + "; got \"" + escape_control(s.substr(0, 40)) + "\"");
  } else {
    bad(where + key, "expected a duration (seconds or \"HH:MM:SS\"), got " + type_of(v));
  }
  if (!d || *d < lo || *d > hi) bad(where + key, "expected " + range + ", got " + v.dump());
  return *d;
}

json segment_json(const SegmentRecord& s) {
  json j = {{"index", s.seg.index},
            {"state", std::string(to_string(s.seg.state))},
            {"job_id", s.seg.slurm_job_id},
            {"attempts", s.seg.attempts},
            {"submit_time", s.seg.submit_time},
            {"start_time", s.seg.start_time},
            {"end_time", s.seg.end_time},
            {"submitting", s.submitting}};
  // A hand-off step once committed: when Slurm took it, -1 while it has not (its committed time
  // says nothing of whether the job got it).
  if (s.signalled_at >= 0) j["signal_sent_at"] = s.signal_sent_at;
  if (s.killed_at >= 0) j["cancel_sent_at"] = s.cancel_sent_at;
  if (s.held_behind > 0) j["held_behind"] = s.held_behind;
  if (s.released_at >= 0) j["released_at"] = s.released_at;
  if (s.fate_unknown()) j["fate_unknown_since"] = s.lost_at;
  if (!s.output_file.empty()) j["output_file"] = s.output_file;
  if (!s.message.empty()) j["message"] = s.message;
  return j;
}

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k)
      v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const auto at = kBase64.find(c);
      // '=' only at the end, and at most two of them.
      if (c == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++pad;
        v <<= 6;
      } else if (at == std::string_view::npos || pad > 0) {
        return std::nullopt;
      } else {
        v = v << 6 | static_cast<std::uint32_t>(at);
      }
    }
    for (int k = 0; k < 3 - pad; ++k) out += static_cast<char>((v >> (16 - 8 * k)) & 0xff);
  }
  return out;
}

json campaign_summary_json(const CampaignRecord& r) {
  int running = 0, pending = 0, fate_unknown = 0;
  JobId current = 0;
  for (const auto& s : r.segments) {
    fate_unknown += s.fate_unknown();
    running += s.seg.state == SegmentState::kRunning;
    pending += s.seg.state == SegmentState::kPending || s.submitting;
    if (s.seg.state == SegmentState::kRunning || s.seg.state == SegmentState::kPending)
      current = s.seg.slurm_job_id;
  }
  return {{"id", r.spec.id},
          {"name", r.spec.name},
          {"state", std::string(to_string(r.state))},
          {"segments", r.spec.segment_count},  // 0: open-ended (until the done file)
          {"done", r.segments_done()},
          {"running", running},
          {"pending", pending},
          {"current_job", current},
          {"fate_unknown", fate_unknown},  // segments that may have run unseen: held
          {"nodes", r.spec.nodes},
          {"gpus_per_node", r.spec.gpus_per_node},
          {"time_limit", r.spec.time_limit},  // 0: the partition's default, not known yet
          {"shape_granted", r.shape_granted},
          {"partition", r.spec.partition},
          {"account", r.account},
          {"qos", r.qos},
          {"max_retries", r.max_retries},
          {"fallback_chain", r.fallback_chain},
          {"max_hours", r.max_hours},  // 0: no cap
          {"done_file", r.done_file},
          {"policy", r.spec.policy},
          {"overlap", std::string(to_string(r.spec.overlap))},
          {"created", r.created},
          {"finished", r.finished},
          {"message", r.message}};
}

json campaign_detail_json(const CampaignRecord& r, const CampaignStore& store) {
  json j = campaign_summary_json(r);
  j["script_path"] = r.script_path;
  j["sbatch_options"] = r.sbatch_options;
  j["work_dir"] = r.work_dir;
  j["owner_uid"] = r.owner_uid;
  j["handoff_grace"] = r.spec.handoff_grace;
  j["segment_list"] = json::array();
  for (const auto& s : r.segments) j["segment_list"].push_back(segment_json(s));
  // Why the latest submission could not be checked for a run a restored store did not know.
  j["rerun_check"] = store.value(rerun_check_key(r.spec.id));
  j["submissions"] = json::array();
  for (const auto& s : store.submissions(r.spec.id))
    j["submissions"].push_back({{"segment", s.segment},
                                {"attempt", s.attempt},
                                {"tag", s.tag},
                                {"state", s.state},
                                {"job_id", s.job},
                                {"intent_time", s.intent_time},
                                {"message", s.message},
                                {"outcome", s.outcome},
                                {"reason", s.reason}});
  j["decisions"] = json::array();
  const auto decisions = store.decisions(r.spec.id, 20);
  for (const auto& d : decisions)
    j["decisions"].push_back({{"segment", d.segment},
                              {"time", d.time},
                              {"action", d.action},
                              {"policy", d.policy},
                              {"confidence", d.confidence},
                              {"forecast_start", d.forecast_start},
                              {"slurm_start", d.slurm_start},
                              {"slurm_note", d.slurm_note}});
  // What the forecast knew of the cluster at the latest load of partitions and limits.
  j["cluster"] = nullptr;
  const json m = json::parse(store.value(kMachineKey), nullptr, false);
  if (m.is_object() && m.contains("as_of")) {
    json c = json::object();
    for (const char* k : {"partition", "unavailable_nodes", "max_running_jobs_per_user",
                          "max_running_nodes_per_user", "limits_note", "as_of"})
      if (m.contains(k)) c[k] = m.at(k);
    j["cluster"] = c;
  }
  j["waits"] = wait_record_json(store, r.spec.id, std::numeric_limits<std::size_t>::max() / 2);
  // The latest consultation of the policy: a fallback or an end computes no forecast.
  j["outlook"] = nullptr;
  for (auto d = decisions.rbegin(); d != decisions.rend(); ++d)
    if (d->action == "wait" || d->action == "submit") {
      j["outlook"] = outlook_json(r, *d);
      break;
    }
  return j;
}

json wait_record_json(const CampaignStore& store, std::optional<std::int64_t> campaign,
                      std::size_t limit) {
  const std::size_t predicted = store.predicted_waits(campaign);
  if (predicted == 0) return nullptr;
  std::vector<WaitOutcome> outcomes;
  for (const auto& w : store.started_waits(campaign, limit)) outcomes.push_back({w.stated, w.wait});
  const IntervalRecord r = interval_record(outcomes);
  return {{"predicted", predicted},
          {"jobs", r.jobs},
          {"held_90", r.held_90},
          {"held_50", r.held_50},
          {"median_error_s", r.median_error},
          {"summary", describe(r)}};
}

json outlook_json(const CampaignRecord& r, const DecisionRecord& d) {
  if (r.state != CampaignState::kActive || d.segment < 1 ||
      d.segment > static_cast<int>(r.segments.size()))
    return nullptr;
  const Seconds limit = r.spec.time_limit;
  const SegmentRecord& pred = r.segments[static_cast<std::size_t>(d.segment - 1)];
  // Only while the predecessor runs and the segment has not started; decisions from before the
  // starts were recorded have neither figure nor note.
  if (pred.seg.state != SegmentState::kRunning || pred.seg.start_time < 0) return nullptr;
  if (d.segment < static_cast<int>(r.segments.size()) &&
      r.segments[static_cast<std::size_t>(d.segment)].seg.start_time >= 0)
    return nullptr;
  if (d.forecast_start == kUnknownTime && d.slurm_start == kUnknownTime && d.slurm_note.empty())
    return nullptr;
  json o = {{"segment", d.segment},
            {"as_of", d.time},
            {"forecast_start", d.forecast_start},
            // Asked a decision earlier: "at once" then is no earlier than this decision.
            {"slurm_start",
             d.slurm_start == kUnknownTime ? kUnknownTime : std::max(d.slurm_start, d.time)},
            {"slurm_note", d.slurm_note},
            {"predecessor_end", limit > 0 ? pred.seg.start_time + limit : kUnknownTime},
            {"projected_finish", kUnknownTime}};
  // The segment starts when it can but not before its predecessor ends, and no later boundary
  // waits: a floor on the finish, from Slurm's estimate where there is one.
  const Seconds start = d.slurm_start != kUnknownTime ? d.slurm_start : d.forecast_start;
  if (start != kUnknownTime && limit > 0 && !r.open_ended()) {
    const Seconds left = r.spec.segment_count - d.segment;  // the segment and those after it
    o["projected_finish"] = std::max(start, pred.seg.start_time + limit) + left * limit;
  }
  return o;
}

json partition_knowledge_json(const PartitionInfo& p) {
  json by_qos = json::object();
  for (const auto& [qos, l] : p.limits_by_qos)
    by_qos[qos] = {{"max_running_jobs_per_user", l.max_running_jobs},
                   {"max_running_nodes_per_user", l.max_running_nodes}};
  return {{"partition", p.name},
          {"unavailable_nodes", p.unavailable_nodes},
          {"max_running_jobs_per_user", p.user_limits.max_running_jobs},
          {"max_running_nodes_per_user", p.user_limits.max_running_nodes},
          {"limits_note", p.limits_note},
          {"reservations", p.reservations.size()},
          {"limits_by_qos", by_qos}};
}

CampaignRequest parse_campaign_request(const json& c) {
  const std::string w = "campaign.";
  if (!c.is_object()) bad("campaign", "expected an object, got " + type_of(c));
  only_keys(c, {"name",        "script",        "script_base64",  "script_path",       "segments",
                "nodes",       "gpus_per_node", "time_limit",     "partition",         "account",
                "qos",         "max_retries",   "fallback_chain", "max_hours",         "done_file",
                "policy",      "max_overlap",   "overlap",        "handoff_grace",     "work_dir",
                "environment", "request_key",   "adopt_job",      "export_environment"},
            w);
  if (!c.contains("name")) bad(w + "name", "missing");
  if (c.contains("script") == c.contains("script_base64"))
    bad(w + "script", "give the script as \"script\" or as \"script_base64\" (one of them)");
  // Shape keys are the flags the user gave; the script's #SBATCH lines give the rest.
  CampaignRequest r;
  r.name = get_text(c, "name", w, 200);
  if (c.contains("script_path")) r.script_path = get_string(c, "script_path", w, 4096);
  // Its size is checked once decoded: the same limit whichever way it came.
  if (c.contains("script")) {
    r.script = get_string(c, "script", w, SIZE_MAX);
  } else {
    const auto bytes = base64_decode(get_string(c, "script_base64", w, SIZE_MAX));
    if (!bytes) bad(w + "script_base64", "not base64 (RFC 4648, padded)");
    r.script = *bytes;
  }
  if (const auto why = script_size_problem(r.script_path.empty() ? "the script" : r.script_path,
                                           r.script.size()))
    bad(w + "script", why->what());
  if (c.contains("segments"))
    r.segments = static_cast<int>(get_int(c, "segments", w, 0, kMaxSegments));
  ShapeFlags& f = r.shape;
  if (c.contains("nodes")) f.nodes = static_cast<int>(get_int(c, "nodes", w, 1, 100000));
  if (c.contains("gpus_per_node"))
    f.gpus_per_node = static_cast<int>(get_int(c, "gpus_per_node", w, 0, 1024));
  if (c.contains("time_limit"))
    f.time_limit = get_duration(c, "time_limit", w, kMinTimeLimit, kMaxTimeLimit);
  if (c.contains("partition")) f.partition = get_text(c, "partition", w, 200);
  if (c.contains("account")) f.account = get_text(c, "account", w, 200);
  if (c.contains("qos")) f.qos = get_text(c, "qos", w, 200);
  if (c.contains("max_retries"))
    r.max_retries = static_cast<int>(get_int(c, "max_retries", w, 0, 1000));
  if (c.contains("export_environment")) {
    if (!c.at("export_environment").is_boolean())
      bad(w + "export_environment",
          "expected true or false, got " + type_of(c.at("export_environment")));
    r.export_environment = c.at("export_environment").get<bool>();
  }
  if (c.contains("fallback_chain")) {
    if (!c.at("fallback_chain").is_boolean())
      bad(w + "fallback_chain", "expected true or false, got " + type_of(c.at("fallback_chain")));
    r.fallback_chain = c.at("fallback_chain").get<bool>();
  }
  if (c.contains("max_hours")) {
    const json& v = c.at("max_hours");
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 87600))
      bad(w + "max_hours", "expected a number of hours from 0 (no cap) to 87600, got " + v.dump());
    r.max_hours = v.get<double>();
  }
  if (c.contains("done_file")) r.done_file = get_text(c, "done_file", w, 4096);
  if (c.contains("policy")) r.policy = get_text(c, "policy", w, 4096);
  if (c.contains("max_overlap")) r.max_overlap = get_duration(c, "max_overlap", w, 0, 7 * kDay);
  if (c.contains("overlap")) {
    const std::string o = get_string(c, "overlap", w, 32);
    const auto mode = parse_overlap_mode(o);
    if (!mode) bad(w + "overlap", "expected \"handoff\" or \"concurrent\", got \"" + o + "\"");
    r.overlap = *mode;
  }
  if (c.contains("handoff_grace"))
    r.handoff_grace = get_duration(c, "handoff_grace", w, 0, kMaxHandoffGrace);
  if (c.contains("work_dir")) r.work_dir = get_string(c, "work_dir", w, 4096);
  if (c.contains("adopt_job")) r.adopt_job = get_int(c, "adopt_job", w, 1, INT64_MAX);
  if (c.contains("request_key")) {
    r.request_key = get_text(c, "request_key", w, 64);
    for (const char ch : r.request_key)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-')
        bad(w + "request_key", "expected letters, digits and '-'");
  }
  if (c.contains("environment")) {
    const json& env = c.at("environment");
    if (!env.is_array()) bad(w + "environment", "expected an array of \"NAME=value\" strings");
    if (env.size() > 10000) bad(w + "environment", "more than 10000 variables");
    for (const auto& e : env) {
      if (!e.is_string() || e.get_ref<const std::string&>().find('=') == std::string::npos)
        bad(w + "environment", "expected an array of \"NAME=value\" strings");
      r.environment.push_back(e.get<std::string>());
    }
  }
  return r;
}

// Configs without a [socket] path share the default socket, so a request may reach the daemon of
// another store: served, a cancel would end this store's campaign of that number.
void ControlHandler::check_store(const json& store) const {
  if (!store.is_string()) bad("store", "expected the path of the store the request is for");
  const std::string& wanted = store.get_ref<const std::string&>();
  if (wanted == store_.path() || same_store_file(wanted, store_.path())) return;
  std::string socket = "its socket";
  if (hooks_.status)
    if (const json status = hooks_.status();
        status.contains("socket") && status["socket"].is_string())
      socket = status["socket"].get<std::string>();
  throw RequestError("the daemon at " + socket + " serves " + store_.path() + ", not " + wanted +
                     "; give [socket] path (a socket of its own) in the config whose store is " +
                     wanted + ", or stop that daemon");
}

json ControlHandler::dispatch(const json& req, std::uint32_t peer_uid) {
  if (!req.is_object()) throw RequestError("a request is a JSON object, got " + type_of(req));
  if (!req.contains("op")) throw RequestError("op: missing");
  const std::string op = get_string(req, "op", "", 32);
  auto id_of = [&]() -> std::int64_t {
    only_keys(req, {"op", "id"}, "");
    if (!req.contains("id")) bad("id", "missing");
    return get_int(req, "id", "", 1, INT64_MAX);
  };
  if (op == "ping") {
    only_keys(req, {"op"}, "");
    return {{"ok", true}, {"version", kVersion}, {"protocol", kProtocolVersion}};
  }
  if (op == "status") {
    only_keys(req, {"op"}, "");
    return {{"ok", true}, {"daemon", hooks_.status ? hooks_.status() : json::object()}};
  }
  if (op == "list") {
    only_keys(req, {"op"}, "");
    json list = json::array();
    for (const CampaignRecord* r : controller_.campaigns())
      list.push_back(campaign_summary_json(*r));
    return {{"ok", true}, {"campaigns", list}};
  }
  if (op == "show") {
    const auto id = id_of();
    const CampaignRecord* r = controller_.find(id);
    if (!r) throw RequestError("there is no campaign " + std::to_string(id));
    return {{"ok", true}, {"campaign", campaign_detail_json(*r, store_)}};
  }
  if (op == "add") {
    only_keys(req, {"op", "campaign"}, "");
    if (!req.contains("campaign")) bad("campaign", "missing");
    CampaignRequest r = parse_campaign_request(req.at("campaign"));
    r.owner_uid = peer_uid;
    std::vector<std::string> notes;
    const CampaignRecord& rec = controller_.add(std::move(r), &notes);
    if (hooks_.poke) hooks_.poke();
    return {{"ok", true}, {"campaign", campaign_summary_json(rec)}, {"notes", notes}};
  }
  if (op == "cancel") {
    const auto id = id_of();
    Actions a = controller_.cancel(id);
    if (hooks_.perform && !a.empty()) hooks_.perform(std::move(a));
    return {{"ok", true}, {"campaign", campaign_summary_json(*controller_.find(id))}};
  }
  if (op == "pause") {
    const auto id = id_of();
    return {{"ok", true}, {"campaign", campaign_summary_json(controller_.pause(id))}};
  }
  if (op == "resume") {
    const auto id = id_of();
    const CampaignRecord& rec = controller_.resume(id);
    if (hooks_.poke) hooks_.poke();
    return {{"ok", true}, {"campaign", campaign_summary_json(rec)}};
  }
  if (op == "export") {  // `mirage trace export` while the daemon holds the store
    only_keys(req, {"op", "out", "partition"}, "");
    if (!req.contains("out")) bad("out", "missing");
    const std::string out = get_string(req, "out", "", 4096);
    if (out.empty() || out[0] != '/') bad("out", "expected an absolute path");
    // export_store refuses the store's own files (by inode: through `..` or a link too).
    const std::string partition =
        req.contains("partition") ? get_text(req, "partition", "", 200) : std::string();
    StoreExport e;
    try {
      e = export_store(store_, partition, out);
    } catch (const std::runtime_error& ex) {
      if (dynamic_cast<const sql::StoreError*>(&ex)) throw;
      throw RequestError(ex.what());
    }
    return {{"ok", true}, {"jobs", e.jobs}, {"partition", e.partition}};
  }
  if (op == "settle") {
    only_keys(req, {"op", "id", "segment", "ran"}, "");
    for (const char* key : {"id", "segment", "ran"})
      if (!req.contains(key)) bad(key, "missing");
    if (!req.at("ran").is_boolean()) bad("ran", "expected true or false");
    const CampaignRecord& rec = controller_.settle(
        get_int(req, "id", "", 1, INT64_MAX),
        static_cast<int>(get_int(req, "segment", "", 0, kMaxSegments)), req.at("ran").get<bool>());
    if (hooks_.poke) hooks_.poke();
    return {{"ok", true}, {"campaign", campaign_summary_json(rec)}};
  }
  throw RequestError(
      "op: unknown operation '" + op.substr(0, 32) +
      "' (expected: ping, status, list, show, add, cancel, pause, resume, settle, export)");
}

std::string ControlHandler::handle(const std::string& line, std::uint32_t peer_uid) {
  ++requests_;
  json reply;
  try {
    json req = json::parse(line);  // throws on malformed input, invalid UTF-8 included
    if (req.is_object() && req.contains("store")) {
      check_store(req.at("store"));
      req.erase("store");
    }
    reply = dispatch(req, peer_uid);
  } catch (const json::parse_error& e) {
    reply = {{"ok", false}, {"error", std::string("malformed JSON: ") + e.what()}};
  } catch (const RequestError& e) {
    reply = {{"ok", false}, {"error", e.what()}};
  } catch (const sql::StoreError& e) {
    // The transaction was rolled back: nothing of the request was kept.
    spdlog::error("store {}: cannot be written: {}; the request was refused", store_.path(),
                  e.what());
    reply = {{"ok", false},
             {"error", "the store " + store_.path() + " cannot be written (" + e.what() +
                           "); nothing was changed: try again once it can"}};
    if (hooks_.store_failed) hooks_.store_failed(e.what());
  } catch (const json::exception& e) {
    reply = {{"ok", false}, {"error", std::string("bad request: ") + e.what()}};
  } catch (const std::exception& e) {
    spdlog::error("control request failed: {}", e.what());
    reply = {{"ok", false}, {"error", std::string("internal error: ") + e.what()}};
  }
  if (!reply.value("ok", false)) ++errors_;
  // Replace invalid UTF-8 (a request may echo bytes back in an error) rather than throw.
  return reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

json call_daemon(const std::string& socket_path, const json& request, int timeout_ms) {
  const std::string line = control_request(socket_path, request.dump(), timeout_ms);
  json reply = json::parse(line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    throw ControlClientError("the daemon sent a malformed reply: " + line.substr(0, 200));
  if (!reply.value("ok", false)) throw RequestError(reply.value("error", std::string("failed")));
  return reply;
}

bool carries_request_key(const json& request) {
  const auto c = request.find("campaign");
  return c != request.end() && c->is_object() && !c->value("request_key", std::string()).empty();
}

json call_daemon_keyed(const std::string& socket_path, const json& request, int tries,
                       int timeout_ms) {
  const bool keyed = carries_request_key(request);
  for (int attempt = 1;; ++attempt) {
    try {
      return call_daemon(socket_path, request, timeout_ms);
    } catch (const ControlClientError& e) {
      if (!keyed || !e.request_sent() || attempt >= tries) throw;
      // A daemon restarting comes back within seconds; its store answers the same key.
      std::this_thread::sleep_for(std::chrono::seconds(attempt));
    }
  }
}

}  // namespace mirage::daemon
