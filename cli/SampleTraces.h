#pragma once
// The traces shipped with mirage, by name: `--trace sample:sacct` works from any directory, in a
// checkout and once installed (share/mirage/samples beside the program).
#include <CLI/CLI.hpp>
#include <string>

namespace mirage::cli {

// "sample:NAME" -> the path of the shipped sample-NAME.* ; anything else unchanged. Throws
// CLI::ValidationError naming the samples there are when NAME is none of them.
std::string resolve_sample_trace(const std::string& value);

// The same as a CLI11 transform, for every option that names a trace.
CLI::Validator sample_trace();

}  // namespace mirage::cli
