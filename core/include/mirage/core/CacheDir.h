#pragma once
// Where mirage keeps what it can make again (probes, training checkpoints, inferred
// calibrations): the user's cache directory, never the working tree unless a flag asks.
#include <string>

namespace mirage {

// $XDG_CACHE_HOME/mirage, else $HOME/.cache/mirage, else /tmp/mirage-cache-<uid>; with `sub`
// appended. Created (private to the user) when missing; throws std::runtime_error when it cannot
// be.
std::string user_cache_dir(const std::string& sub = {});

// A file name for `path` in a cache: its base name and a digest of its absolute path, so that two
// files of one name in different folders do not share an entry.
std::string cache_name_for(const std::string& path, const std::string& suffix);

}  // namespace mirage
