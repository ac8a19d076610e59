#include "RenamedFlags.h"

#include <fmt/format.h>

namespace mirage::cli {

void note_renamed(const std::string& old_name, const std::string& new_name) {
  fmt::print(stderr, "mirage: {} is now {}; the old name goes in the next release\n", old_name,
             new_name);
}

}  // namespace mirage::cli
