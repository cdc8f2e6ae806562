// The few SQLite helpers that the results store and the service's job queue share: a statement
// that finalizes itself, an immediate transaction that rolls back unless committed, and errors
// that name the file. Private to the store's modules (not an API of the store).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "store/storage_error.h"

namespace ptxbench::sqlite {

// What kind of failure a result code is: busy and locked are worth another try, as is an I/O
// error or a file that cannot be opened (a disk coming back); full is full.
inline StorageFailure FailureOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StorageFailure::kBusy;
    case SQLITE_FULL:
      return StorageFailure::kFull;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return StorageFailure::kUnavailable;
    default:
      return StorageFailure::kOther;
  }
}

[[noreturn]] inline void Fail(sqlite3* db, const std::string& path, const std::string& what,
                              int rc) {
  throw StorageError(FailureOf(rc),
                     path + ": " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}
[[noreturn]] inline void Fail(sqlite3* db, const std::string& path, const std::string& what) {
  Fail(db, path, what, db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM);
}

inline void Exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  if (int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StorageError(FailureOf(rc), path + ": " + msg + " (in: " + sql.substr(0, 60) + ")");
  }
}

// How long a connection waits for another writer's lock before SQLITE_BUSY.
constexpr int kBusyTimeoutMs = 60000;

// The one way a connection is opened here: read-write (created when `create`), used by one
// thread at a time (NOMUTEX: the callers serialize their own use), extended result codes, the
// busy timeout, then `pragmas`. `what` names the file's role in the error ("the results
// store"). The caller closes it with sqlite3_close_v2.
inline sqlite3* OpenConnection(const std::string& path, const std::string& what, bool create,
                               const std::string& pragmas) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    throw EnvironmentError(path + ": cannot open " + what + ": " + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  try {
    if (!pragmas.empty()) Exec(db, path, pragmas);
  } catch (...) {
    sqlite3_close_v2(db);
    throw;
  }
  return db;
}

// A prepared statement, finalized when it goes away (also when a throw unwinds past it).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
    if (int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr); rc != SQLITE_OK)
      Fail(db, path, "cannot prepare a statement", rc);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void Text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void TextOrNull(int i, const std::string& v) {  // "" is stored as NULL (COALESCE keeps old)
    if (v.empty())
      sqlite3_bind_null(s_, i);
    else
      Text(i, v);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void Real(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void Real(int i, const std::optional<double>& v) {
    if (v)
      Real(i, *v);
    else
      sqlite3_bind_null(s_, i);
  }

  // True with a row to read, false when done.
  bool Step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Fail(db_, path_, "statement failed", rc);
  }
  // Runs a statement that returns no rows, and readies it for the next bindings.
  void Run() {
    Step();
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  std::string ColText(int c) const {
    const unsigned char* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(s_, c)))
             : std::string();
  }
  int64_t ColInt(int c) const { return sqlite3_column_int64(s_, c); }
  double ColReal(int c) const { return sqlite3_column_double(s_, c); }
  bool ColNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::optional<double> ColOptReal(int c) const {
    return ColNull(c) ? std::nullopt : std::optional<double>(ColReal(c));
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* s_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock at the start (waiting through the busy timeout), so a
// transaction never fails half-way because another writer got in first; whatever does not
// reach Commit() is rolled back.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    Exec(db, path, "BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void Commit() {
    Exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

// The first column of the first row of `sql` (0 without a row); the statement is finalized
// before returning, so that it holds no read transaction open.
inline int64_t QueryInt(sqlite3* db, const std::string& path, const std::string& sql) {
  Stmt s(db, path, sql);
  return s.Step() ? s.ColInt(0) : 0;
}

}  // namespace ptxbench::sqlite
