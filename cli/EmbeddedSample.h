#pragma once
// The sample trace compiled into the binary, so `mirage simulate` works with no file at all.
#include <string>
#include <string_view>

namespace mirage::cli {
std::string_view embedded_sample_trace();
std::string embedded_sample_name();
}  // namespace mirage::cli
