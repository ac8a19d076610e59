#pragma once
// Each `mirage` subcommand registers itself on the application; one file per command group.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mirage::cli {

void register_trace_commands(CLI::App& app);               // mirage trace info ...
void register_trace_fidelity_command(CLI::App& trace);     // mirage trace fidelity
void register_trace_calibrate_command(CLI::App& trace);    // mirage trace calibrate
void register_trace_export_command(CLI::App& trace);       // mirage trace export
void register_trace_waits_command(CLI::App& trace);        // mirage trace waits
void register_trace_refit_waits_command(CLI::App& trace);  // mirage trace refit-waits
void register_simulate_command(CLI::App& app);             // mirage simulate ...
void register_eval_command(CLI::App& app);                 // mirage eval ...
void register_daemon_commands(CLI::App& app);              // mirage daemon, mirage status
void register_forecast_command(CLI::App& app);             // mirage forecast
void register_tick_command(CLI::App& app);                 // mirage tick
void register_campaign_commands(
    CLI::App& app);  // mirage campaign add|list|show|cancel|pause|resume

// Where the daemon's control socket is (the client commands share these flags).
struct DaemonSocketOptions {
  std::string socket;
  std::string config;
  // With --config and no daemon answering, serve the request on the config's store directly.
  bool store_without_daemon = false;
  void add_to(CLI::App& cmd);
  std::string resolve() const;
};
// One request to the daemon (or its store, see above); on failure prints why and sets rc (3: not
// running, 1: refused).
std::optional<nlohmann::json> ask_daemon(const DaemonSocketOptions& where,
                                         const nlohmann::json& request, int& rc);
void register_train_command(CLI::App& app);  // mirage train ...

// `mirage daemon` and `mirage tick`: the store was moved, not copied (daemon/store/StoreHome.h).
inline constexpr const char* kStoreMovedHelp =
    "The store was moved here from where it was made, which is gone for good: bind it to this "
    "path instead of refusing it as a copy";

}  // namespace mirage::cli
