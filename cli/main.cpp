// The `mirage` command: trace tools, simulate, eval, train, the daemon, ticks and campaigns.
#include <CLI/CLI.hpp>
#include <iostream>

#include "Commands.h"
#include "LearnedPlugin.h"
#include "mirage/core/Error.h"
#include "mirage/core/Version.h"

int main(int argc, char** argv) {
  CLI::App app{"mirage: keep long GPU training campaigns running on Slurm without gaps"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mirage ") + mirage::kVersion);
  mirage::cli::register_trace_commands(app);
  mirage::cli::register_simulate_command(app);
  mirage::cli::register_eval_command(app);
  mirage::cli::register_daemon_commands(app);
  mirage::cli::register_tick_command(app);
  mirage::cli::register_forecast_command(app);
  mirage::cli::register_campaign_commands(app);
  mirage::cli::register_train_command(app);
  mirage::cli::load_model_files_through_plugin();  // LibTorch only when a model file is named
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const mirage::InputError& e) {
    std::cerr << "mirage: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mirage: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
