#pragma once
// Replaces a file so that a crash at any moment leaves either the old or the new contents,
// never a mix or nothing: written to a temporary file in the same folder, flushed to disk, renamed
// over the target, and the folder flushed so the rename itself survives a power loss.
#include <string>
#include <string_view>

namespace mirage {

// Throws std::runtime_error naming the path and the reason (e.g. "No space left on device").
void write_file_durably(const std::string& path, std::string_view contents);

}  // namespace mirage
