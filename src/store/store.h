// The results store: runs, trajectories, turns and evaluation records in one SQLite file, so
// that reports can filter and join across many runs without reading every JSON file again.
// The JSON files of a run folder stay the source of truth; the store is an index of them that
// can always be rebuilt by importing the folders again (import.h).
//
// Concurrency: the file is in WAL mode with a busy timeout, and every write is one
// BEGIN IMMEDIATE ... COMMIT transaction, so that several processes and many threads can write
// at once, readers never block writers, and a process killed mid-write leaves the last
// committed state. One ResultsStore may be shared by all the threads of a process (see the
// members for how); a child made with fork() must open its own, never use its parent's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/report_rows.h"

struct sqlite3;

namespace ptxbench {

// What Load returns. Each list is a set of accepted values (empty: any); the lists combine
// with AND.
struct StoreFilter {
  std::vector<std::string> models;  // the run's model name (models.json) or the provider's id
  std::vector<std::string> tasks;
  std::vector<std::string> archs;  // the run's --arch, e.g. "sm_90a"
  std::vector<std::string> packs;  // the run's pack variant ("none", "full", ...)
  std::vector<std::string> runs;   // store run ids (PutRun's return value)
};

// An evaluation record to write with a trajectory, under its store-wide id.
struct StoredEvaluation {
  std::string id;  // see EvaluationKey
  nlohmann::json record;
};

struct StoreCounts {
  int64_t runs = 0, trajectories = 0, turns = 0, evaluations = 0;
};

class ResultsStore {
 public:
  // The schema version this code writes; a file with a newer one is refused.
  static int CodeSchemaVersion();

  // Opens the store at `path`, creating it (and bringing an older schema up to date) when
  // needed. Throws EnvironmentError, with the path and SQLite's message, when the file cannot
  // be opened, is not a ptxbench store, or has a schema newer than this code.
  static std::unique_ptr<ResultsStore> Open(const std::string& path);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  // The store-wide id of an evaluation that a run's turn names: the agent's ids
  // ("<task>-<k>/turn<N>") repeat in every run, so they are qualified by the run id.
  static std::string EvaluationKey(const std::string& run_id, const std::string& evaluation_id);
  // The key of the record that a trajectory's turn (its JSON) names: EvaluationKey of its
  // evaluation_id, else of its evaluation_file; "" for a turn without an evaluation.
  static std::string TurnEvaluationKey(const std::string& run_id, const nlohmann::json& turn);

  // Writes (or updates) a run from its run.json; returns its id: the run folder's name, made
  // unique with a digest suffix if another run already has that name. The same run (same
  // started_at, model and tasks) written again keeps its id, so a resumed run updates its row.
  // `run_dir` is where the run's files are (made absolute). Throws InputError when the JSON is
  // not a run.
  std::string PutRun(const nlohmann::json& run_json, const std::string& run_dir);

  // Writes a trajectory file's content and all its turns (replacing those written before), and
  // the given evaluation records, in one transaction: a reader sees all of them or none. The
  // run must have been written. Throws InputError when the trajectory is malformed (nothing
  // is written then).
  void PutTrajectory(const std::string& run_id, const nlohmann::json& trajectory_json,
                     const std::vector<StoredEvaluation>& evaluations = {});

  // Throws InputError (naming `what`) unless `record` is an evaluation record the store takes:
  // an object with a string "status" and, if it has one, a ptxbench.evaluation/N schema.
  static void CheckEvaluation(const nlohmann::json& record, const std::string& what);

  // Writes (or replaces) one evaluation record not tied to a run. Throws InputError when it is
  // not an evaluation record.
  void PutEvaluation(const nlohmann::json& record, const std::string& evaluation_id);

  // The trajectories that match, with their spent turns in order; verification, arch_tag and
  // upstream_arch_tag (the evaluations table's column: the record's, or its arch_tag for a
  // record from before the field) come from the turns' evaluation records when the store has
  // them. Ordered by run id, then trajectory id.
  Dataset Load(const StoreFilter& filter = {}) const;

  std::optional<nlohmann::json> GetEvaluation(const std::string& evaluation_id) const;
  std::optional<nlohmann::json> GetRun(const std::string& run_id) const;  // its run.json
  StoreCounts Counts() const;
  int SchemaVersion() const;
  // PRAGMA integrity_check's answer: "ok" for a sound file.
  std::string IntegrityCheck() const;
  const std::string& path() const { return path_; }

 private:
  explicit ResultsStore(std::string path);
  sqlite3* Connect() const;  // a new connection with this store's settings

  // A read connection borrowed from the pool for one call, given back when it goes away.
  class Reader;

  std::string path_;
  // Writes go through one connection and one mutex: SQLite admits one writer at a time
  // anyway, and queueing in-process writers here costs nothing, where letting them contend
  // for the file lock would make each wait in SQLite's sleeping busy handler.
  mutable std::mutex write_mu_;
  sqlite3* writer_ = nullptr;
  // Reads use connections of their own (WAL readers run alongside the writer), kept idle
  // here between calls so that a Load does not pay for opening the file.
  mutable std::mutex pool_mu_;
  mutable std::vector<sqlite3*> idle_readers_;
};

}  // namespace ptxbench
