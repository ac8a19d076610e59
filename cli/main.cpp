// The `mirage` command: trace tools, simulate, eval, train, the daemon, ticks and campaigns.
#include <CLI/CLI.hpp>
#include <iostream>

#include "Commands.h"
#include "SlurmReleaseGate.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/core/Error.h"

int main(int argc, char** argv) {
  CLI::App app{"mirage: keep long GPU training campaigns running on Slurm without gaps"};
  app.require_subcommand(1);
  app.set_version_flag("--version", mirage::cli::version_line());
  mirage::cli::register_trace_commands(app);
  mirage::cli::register_simulate_command(app);
  mirage::cli::register_eval_command(app);
  mirage::cli::register_daemon_commands(app);
  mirage::cli::register_tick_command(app);
  mirage::cli::register_forecast_command(app);
  mirage::cli::register_campaign_commands(app);
  mirage::cli::register_train_command(app);
  mirage::learned::register_learned_policies();  // model files decide without LibTorch
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit status, already explained
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // A usage mistake: one line naming the flag and what it takes, and status 2, as for a bad
    // input file (and as getopt-based tools do).
    std::cerr << "mirage: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const mirage::InputError& e) {
    std::cerr << "mirage: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mirage: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
