#pragma once
// The control socket's protocol: one JSON object per line each way. Requests:
//   {"op":"ping"}                               -> {"ok":true,"version":...}
//   {"op":"status"}                             -> {"ok":true,"daemon":{...}}
//   {"op":"list"}                               -> {"ok":true,"campaigns":[...]}
//   {"op":"show","id":N}                        -> {"ok":true,"campaign":{... "segments":[...]}}
//   {"op":"add","campaign":{...}}               -> {"ok":true,"campaign":{...},"notes":[...]}
//   {"op":"cancel"|"pause"|"resume","id":N}     -> {"ok":true,"campaign":{...}}
// Any request may carry "store":PATH, the store its sender meant (`--config`'s): refused unless it
// is this daemon's store (the same file); one without it is served as before.
// Every failure is {"ok":false,"error":"..."}: malformed JSON, unknown ops or keys, wrong types,
// values out of range (time_limit 1 minute to 365 days, handoff_grace up to 7 days), control
// characters in name, partition, account or policy, and refused requests alike. Requests are
// checked strictly, like the config file.
//
// JSON carries only UTF-8, a script any bytes: `campaign add` sends it as "script_base64"; the
// daemon still reads a plain "script" from older clients.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "mirage/daemon/campaigns/CampaignController.h"

namespace mirage::daemon {

inline constexpr const char* kProtocolVersion = "1";

// A segment's time limit and hand-off grace, as `campaign add` and the add request accept them:
// far beyond any cluster's limits, and far from overflowing a start time plus the limit.
inline constexpr Seconds kMinTimeLimit = kMinute;
inline constexpr Seconds kMaxTimeLimit = 365 * kDay;
inline constexpr Seconds kMaxHandoffGrace = 7 * kDay;

// Standard base64 (RFC 4648, padded). decode: nullopt for text that is not base64.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

nlohmann::json campaign_summary_json(const CampaignRecord& r);
nlohmann::json campaign_detail_json(const CampaignRecord& r, const CampaignStore& store);
// When the next segment should start (by mirage's forecast and by Slurm's estimate, as of the
// latest decision `d`, were it submitted then) and the campaign finish, for `campaign show`;
// null unless the campaign runs a segment and its next has not started.
// How often the wait intervals stated at submission held (of `campaign`'s jobs, or of the
// latest `limit` of all): jobs, held_90, held_50, median_error_s and the sentence; null when no
// wait was predicted (no [policy] wait_distribution).
nlohmann::json wait_record_json(const CampaignStore& store, std::optional<std::int64_t> campaign,
                                std::size_t limit);
nlohmann::json outlook_json(const CampaignRecord& r, const DecisionRecord& d);
// What a forecast knows of partition `p` beside its jobs: the nodes out of use, the reservations
// to come, the user's limits (under the default QOS and under each one) and where they came
// from. `mirage forecast` prints it; the daemon keeps it in the store for `campaign show`.
nlohmann::json partition_knowledge_json(const PartitionInfo& p);

class ControlHandler {
 public:
  struct Hooks {
    std::function<void(Actions)> perform;    // run actions on the Slurm thread
    std::function<void()> poke;              // tick soon (after add / resume)
    std::function<nlohmann::json()> status;  // the daemon's own state
    // A request's writes to the store failed (disk full, a file made read-only): the daemon
    // reloads its campaigns from the store, which holds what was committed.
    std::function<void(const std::string&)> store_failed;
  };
  ControlHandler(CampaignController& controller, CampaignStore& store, Hooks hooks)
      : controller_(controller), store_(store), hooks_(std::move(hooks)) {}

  // One request line from a peer with uid `peer_uid`; returns the reply (one line, no '\n').
  std::string handle(const std::string& line, std::uint32_t peer_uid);

  std::uint64_t requests() const { return requests_; }
  std::uint64_t errors() const { return errors_; }

 private:
  nlohmann::json dispatch(const nlohmann::json& request, std::uint32_t peer_uid);
  // Throws RequestError unless `store` names this handler's store (the same file).
  void check_store(const nlohmann::json& store) const;
  CampaignController& controller_;
  CampaignStore& store_;
  Hooks hooks_;
  std::uint64_t requests_ = 0;
  std::uint64_t errors_ = 0;
};

// Sends one request to the daemon at `socket_path` and returns its reply. Throws
// ControlClientError when the daemon cannot be reached and RequestError when it answers
// {"ok":false}.
nlohmann::json call_daemon(const std::string& socket_path, const nlohmann::json& request,
                           int timeout_ms = 30000);

// As call_daemon, but a request that carries a request key (an add: the daemon makes at most one
// campaign per key) is sent again, up to `tries` times in all, when it went out and no answer
// came back (a daemon restarting, a reply lost): the retry returns what the first try made.
// Requests without a key are sent once, since the daemon may have carried them out.
// Whether `request` is an add that carries a request key.
bool carries_request_key(const nlohmann::json& request);
nlohmann::json call_daemon_keyed(const std::string& socket_path, const nlohmann::json& request,
                                 int tries = 3, int timeout_ms = 30000);

// Reads a "campaign" object of an add request. Throws RequestError naming the key at fault.
CampaignRequest parse_campaign_request(const nlohmann::json& j);

}  // namespace mirage::daemon
