// The tuning database: one JSON-lines file, one record per measured
// candidate (schema: artifacts_schema/tuning-database.md). Records are
// appended as results arrive, each with one write(2) of one line to a file
// opened O_APPEND, so a process killed at any moment leaves every complete
// record readable; a truncated last line (the write in flight) is ignored
// when the file is opened again and overwritten by the next append.
//
//   Database db = Database::open("tune.db");          // creates it when missing
//   if (!db.contains(key, target, trace_text)) db.append(record);
//   std::optional<TuningRecord> best = db.best(key, target);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlcc/ir/trace.h"

namespace mlcc::tune {

enum class RecordStatus { ok, build_error, run_error, wrong_result, timeout, crash };
const char* statusName(RecordStatus s);  // "ok", "build_error", ...
// The status a name stands for (statusName's inverse); nullopt for an unknown name.
std::optional<RecordStatus> parseStatusName(std::string_view name);

struct TuningRecord {
  std::string workload;  // the task's workload key (task.h)
  std::string target;    // target::Target::str()
  std::string func;      // the prim func's name when it was measured (for readers)
  ir::Trace trace;       // the schedule, with every sampling decision
  RecordStatus status = RecordStatus::ok;
  std::vector<double> run_us;  // the timed runs (microseconds per call); empty unless ok
  double flops = 0;            // of one call
  std::string error;           // unless ok: what went wrong
  // The median of run_us (+inf unless ok).
  double medianUs() const;
};

class Database {
 public:
  // Opens (creating when missing) and reads a database. A malformed record
  // other than a truncated last line throws mlcc::Error naming FILE:LINE.
  static Database open(const std::string& path);
  // Reads a database without opening it for appends (for merge and apply).
  static Database read(const std::string& path);

  // Appends a record to the file and to memory.
  void append(const TuningRecord& r);

  // Whether a record for this workload, target and trace (its text,
  // ir::printTrace) exists: a resumed run measures nothing twice.
  bool contains(const std::string& workload, const std::string& target, const std::string& trace_text) const;
  // The ok record with the smallest median time, if any.
  std::optional<TuningRecord> best(const std::string& workload, const std::string& target) const;
  // Every record of a workload and target, in file order.
  std::vector<TuningRecord> records(const std::string& workload, const std::string& target) const;
  size_t size() const;

  // Writes the records of `inputs` (duplicates of one workload, target and
  // trace kept once: the first) to `output`, atomically.
  static void merge(const std::vector<std::string>& inputs, const std::string& output);

  ~Database();
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;

 private:
  struct Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlcc::tune
