#pragma once
// Each `mirage` subcommand registers itself on the application; one file per command group.
#include <CLI/CLI.hpp>

namespace mirage::cli {

void register_trace_commands(CLI::App& app);    // mirage trace info ...
void register_simulate_command(CLI::App& app);  // mirage simulate ...
void register_eval_command(CLI::App& app);      // mirage eval ...

}  // namespace mirage::cli
