#pragma once
// Flags renamed to sbatch's words: for one release the old name still works, hidden from --help,
// and says on stderr which flag took its place.
#include <CLI/CLI.hpp>
#include <string>

namespace mirage::cli {

// The line an old flag prints when given.
void note_renamed(const std::string& old_name, const std::string& new_name);

// `old_name` as a hidden option that fills the same variable as `new_name` (checks are the
// caller's, on the returned option).
template <typename T>
CLI::Option* add_renamed_option(CLI::App& cmd, const std::string& old_name,
                                const std::string& new_name, T& variable) {
  return cmd.add_option(old_name, variable, "Old name of " + new_name)
      ->group("")
      ->each([old_name, new_name](const std::string&) { note_renamed(old_name, new_name); });
}

}  // namespace mirage::cli
