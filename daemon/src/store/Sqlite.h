#pragma once
// A thin RAII layer over the SQLite C API: a connection, prepared statements with positional
// binding, and transactions. Errors throw StoreError with SQLite's message and the statement.
#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mirage::daemon::sql {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::int64_t v);
  Statement& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Statement& bind_blob(int i, const void* data, std::size_t size);

  // Steps once: true while a row is available.
  bool step();
  // Runs to completion (for statements without results) and resets for reuse.
  void run();
  void reset();

  std::int64_t integer(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  std::vector<unsigned char> blob(int col) const;
  bool is_null(int col) const;

 private:
  void check(int rc, const char* what) const;
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

class Database {
 public:
  explicit Database(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(std::string_view sql);
  Statement prepare(std::string_view sql) { return Statement(db_, sql); }
  std::int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* handle() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// BEGIN IMMEDIATE on construction; ROLLBACK unless commit() was called. Nested use is flattened:
// only the outermost transaction commits.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool outer_ = false;
  bool done_ = false;
};

}  // namespace mirage::daemon::sql
