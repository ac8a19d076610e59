#pragma once
// Why a path cannot be used, said before SQLite or bind() fail with a vaguer message: shared by
// validate_daemon_config (--check and the start) and the store's open errors.
#include <filesystem>
#include <optional>
#include <string>

namespace mirage::daemon {

// Why files cannot be made in `dir`: it, or the nearest ancestor that exists when it does not,
// is not a writable directory. nullopt when they can.
std::optional<std::string> directory_problem(const std::filesystem::path& dir);

// Why `path` cannot be the SQLite store: a directory or other non-file, not readable and
// writable, not a SQLite database, or in a directory where SQLite cannot make its -wal and -shm
// files. nullopt when none of these holds.
std::optional<std::string> store_problem(const std::string& path);

}  // namespace mirage::daemon
