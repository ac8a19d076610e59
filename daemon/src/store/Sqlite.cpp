#include "store/Sqlite.h"

#include <cstring>

namespace mirage::daemon::sql {
namespace {

// SQLite's message, and for a failed file operation the system's reason ("unable to open
// database file" alone does not say why).
std::string reason(sqlite3* db, const char* message = nullptr) {
  std::string out = message ? message : sqlite3_errmsg(db);
  if (!db) return out;
  const int code = sqlite3_errcode(db) & 0xff;
  const bool io = code == SQLITE_CANTOPEN || code == SQLITE_IOERR || code == SQLITE_READONLY ||
                  code == SQLITE_PERM || code == SQLITE_FULL;
  if (const int e = sqlite3_system_errno(db); io && e != 0)
    out += std::string(" (") + std::strerror(e) + ")";
  return out;
}

}  // namespace

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
  const int rc =
      sqlite3_prepare_v2(db_, sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  check(rc, "prepare");
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::check(int rc, const char* what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  throw StoreError(std::string("sqlite ") + what + " failed: " + reason(db_) +
                   " (in: " + sql_.substr(0, 80) + ")");
}

Statement& Statement::bind(int i, std::int64_t v) {
  check(sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::bind(int i, double v) {
  check(sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::bind(int i, std::string_view v) {
  check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT),
        "bind");
  return *this;
}
Statement& Statement::bind_blob(int i, const void* data, std::size_t size) {
  check(sqlite3_bind_blob64(stmt_, i, data, size, SQLITE_TRANSIENT), "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string message = reason(db_);
  sqlite3_reset(stmt_);
  throw StoreError("sqlite step failed: " + message + " (in: " + sql_.substr(0, 80) + ")");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::integer(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Statement::real(int col) const {
  return sqlite3_column_double(stmt_, col);
}
std::string Statement::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}
std::vector<unsigned char> Statement::blob(int col) const {
  const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, col));
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::vector<unsigned char>(p, p + n) : std::vector<unsigned char>();
}
bool Statement::is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

Database::Database(const std::string& path) {
  const int rc =
      sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? reason(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError("sqlite: " + message);
  }
  sqlite3_busy_timeout(db_, 5000);
}

Database::~Database() {
  sqlite3_close(db_);
}

void Database::exec(std::string_view sql) {
  char* err = nullptr;
  const std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = reason(db_, err ? err : "unknown error");
    sqlite3_free(err);
    throw StoreError("sqlite: " + message + " (in: " + s.substr(0, 80) + ")");
  }
}

Transaction::Transaction(Database& db) : db_(db) {
  outer_ = sqlite3_get_autocommit(db_.handle()) != 0;
  if (outer_) db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (outer_ && !done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}

void Transaction::commit() {
  if (outer_ && !done_) db_.exec("COMMIT");
  done_ = true;
}

}  // namespace mirage::daemon::sql
