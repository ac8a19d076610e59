#pragma once
// The done file: a path each segment receives as MIRAGE_DONE_FILE. A segment that creates it ends
// its campaign once it exits, so a run whose length in segments nobody knows stops by itself.
#include <cstdint>
#include <optional>
#include <string>

namespace mirage::daemon {

// The campaign's own path beside the store: <store>.done/campaign-<id>-<store id> (the store id
// keeps a store made anew at the same path from meeting an old campaign's file). A store in
// memory (tests) keeps them in the temporary directory.
std::string default_done_file(const std::string& store_path, const std::string& store_id,
                              std::int64_t campaign);

// Makes the file's directory (0700) when missing and says why the file cannot serve: the
// directory cannot be made or written, or the file exists already (the campaign would end before
// it began). nullopt when it can.
std::optional<std::string> prepare_done_file(const std::string& path);

bool done_file_exists(const std::string& path);
// When the file was last written (seconds since the epoch); nullopt when it does not exist.
std::optional<std::int64_t> done_file_time(const std::string& path);

}  // namespace mirage::daemon
