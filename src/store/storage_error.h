// A failure of a database (the SQLite store, the service's queue on SQLite or PostgreSQL), with
// what kind of failure it is. The text (what()) names the file or server and the statement, for
// logs; what a client of the service may be told is PublicMessage(), which names neither: no
// SQL, no path, no database user or host.
#pragma once

#include <string>

#include "common/error.h"

namespace ptxbench {

enum class StorageFailure {
  kUnavailable,  // the server is down, restarting or unreachable; the connection was lost
  kBusy,         // a lock not had in time (SQLite busy/locked, a PostgreSQL lock or timeout)
  kFull,         // no space left for the write
  kOther,        // anything else (a constraint, a malformed database, a bug)
};

class StorageError : public Error {
 public:
  StorageError(StorageFailure failure, const std::string& detail)
      : Error(ErrorKind::kEnvironment, detail), failure_(failure) {}
  StorageFailure failure() const { return failure_; }
  // Worth asking again in a few seconds: the database is coming back or a lock will be free.
  bool retryable() const {
    return failure_ == StorageFailure::kUnavailable || failure_ == StorageFailure::kBusy;
  }
  // One line for an HTTP client: the kind of failure, nothing about where or what ran.
  std::string PublicMessage() const {
    switch (failure_) {
      case StorageFailure::kUnavailable:
        return "the queue's database is unavailable for the moment (down or restarting); try "
               "again shortly";
      case StorageFailure::kBusy:
        return "the queue's database is busy (locked by another writer); try again shortly";
      case StorageFailure::kFull:
        return "the queue's database is full (no space left for the write)";
      case StorageFailure::kOther:
        break;
    }
    return "the queue's database failed (the server's log has the details)";
  }

 private:
  StorageFailure failure_;
};

}  // namespace ptxbench
