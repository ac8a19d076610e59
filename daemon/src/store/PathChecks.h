#pragma once
// Why a path cannot be used, said before SQLite or bind() fail with a vaguer message: shared by
// validate_daemon_config (--check and the start) and the store's open errors.
#include <filesystem>
#include <optional>
#include <string>

namespace mirage::daemon {

// Whether `a` and `b` name one file: the same device and inode where both exist (through `..`, a
// symlink or a hard link), else the same path once `..` and the symlinks of its existing part
// are resolved (a file not made yet, such as a -wal file SQLite would read as the store's).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// Why files cannot be made in `dir`: it, or the nearest ancestor that exists when it does not,
// is not a writable directory. nullopt when they can.
std::optional<std::string> directory_problem(const std::filesystem::path& dir);

// Why the store at `path` has no one name to lock it by: it has hard links (a symlink resolves
// to the real file; a hard link does not, and SQLite keeps its journal beside the name it was
// given). nullopt when it has one link or does not exist.
std::optional<std::string> hard_link_problem(const std::string& path);

// Why `path` cannot be the SQLite store: a directory or other non-file, not readable and
// writable, not a SQLite database, hard-linked, or in a directory where SQLite cannot make its -wal
// and -shm files. nullopt when none of these holds.
std::optional<std::string> store_problem(const std::string& path);

}  // namespace mirage::daemon
