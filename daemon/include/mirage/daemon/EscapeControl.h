#pragma once
// User text (campaign names, messages, paths) shown on a terminal or in a log: control characters
// are written as \xNN (C0, DEL) or \u00NN (C1, as UTF-8) so that a name cannot ring the bell,
// move the cursor or forge a line of output.
// To merge: core/ is getting a shared escaping helper on another branch; this gives way to it.
#include <string>
#include <string_view>

namespace mirage::daemon {

// "a\x07b" -> "a\\x07b"; everything else (printable UTF-8 included) is kept as it is.
std::string escape_control(std::string_view text);

// True when escape_control would change `text`.
bool has_control(std::string_view text);

}  // namespace mirage::daemon
