// The tuning database (database.h): JSON lines read with nlohmann::json and
// checked field by field (every malformed record is an mlcc::Error at
// FILE:LINE), appended with one write(2) per record to an O_APPEND file
// descriptor, a torn last line dropped (and, when opened for appends, cut
// off the file), and merged into one file written atomically.
#include "mlcc/tune/database.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::tune {

namespace {

using Json = nlohmann::json;

constexpr RecordStatus kStatuses[] = {RecordStatus::ok,        RecordStatus::build_error,
                                      RecordStatus::run_error, RecordStatus::wrong_result,
                                      RecordStatus::timeout,   RecordStatus::crash};

// contains()'s key: lengths make it unambiguous whatever the strings hold.
std::string recordKey(const std::string& workload, const std::string& target, const std::string& trace_text) {
  return std::to_string(workload.size()) + ":" + workload + std::to_string(target.size()) + ":" + target +
         trace_text;
}

// best() and records()'s index: workload and target.
std::string groupKey(const std::string& workload, const std::string& target) {
  return std::to_string(workload.size()) + ":" + workload + target;
}

// An error at line `line` of the database `file` (1-based; no column).
[[noreturn]] void failAtLine(const std::string& file, int line, const std::string& message) {
  throw Error(SourceLoc{file, line, 0}, message);
}

// The trace text (ir::printTrace: "trace {\n  ...\n}\n") parsed back, by
// the schedule script parser: "trace" becomes "schedule @f", so the lines of
// the trace keep their numbers.
ir::Trace parseTraceText(const std::string& text, const std::string& file, int line) {
  constexpr std::string_view kKeyword = "trace";
  if (text.compare(0, kKeyword.size(), kKeyword) != 0)
    failAtLine(file, line, "field 'trace' is not the text of a trace (\"trace { ... }\")");
  const std::string script = "schedule @f" + text.substr(kKeyword.size());
  ir::ScheduleScript parsed;
  try {
    parsed = ir::parseScheduleScript(script, "trace");
  } catch (const Error& e) {
    std::string where;
    if (e.loc().line > 0) {
      where = " (at line " + std::to_string(e.loc().line);
      if (e.loc().col > 0) where += ", column " + std::to_string(e.loc().col);
      where += " of the trace)";
    }
    failAtLine(file, line, "field 'trace'" + where + ": " + e.message());
  }
  if (parsed.blocks.size() != 1)
    failAtLine(file, line, "field 'trace' holds text after the trace's closing '}'");
  return std::move(parsed.blocks[0].trace);
}

// Whether `v` can be written as a JSON number (the writer's check of run_us
// and flops; JSON has no infinities or NaNs).
bool isNonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

// A record read from one line. Throws mlcc::Error at FILE:LINE for anything
// malformed; a line that is not JSON at all sets `*not_json` first (the
// caller tells a torn last line from a bad one by it).
TuningRecord parseRecord(const std::string& text, const std::string& file, int line, bool* not_json) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    *not_json = true;
    // nlohmann's message: "[json.exception.parse_error.101] parse error at
    // line 1, column 7: syntax error while ...": keep what follows the column.
    std::string what = e.what();
    const size_t column = what.find(", column ");
    const size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    const int col = static_cast<int>(std::min<size_t>(e.byte, text.size()));
    // The line is shown under the message unless it is long (a record with
    // a compiler's whole output).
    throw Error(SourceLoc{file, line, std::max(col, 1)}, "not a JSON record: " + what,
                text.size() <= 300 ? text : std::string());
  } catch (const Json::exception& e) {
    // JSON that nlohmann cannot hold (a number beyond a double's range).
    std::string what = e.what();
    const size_t bracket = what.find("] ");
    failAtLine(file, line,
               "not a valid record: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!j.is_object()) failAtLine(file, line, "a record must be a JSON object");

  static const std::unordered_set<std::string> kKnown = {"workload", "target", "func",  "trace",
                                                         "status",   "run_us", "flops", "error"};
  for (const auto& item : j.items())
    if (!kKnown.count(item.key())) failAtLine(file, line, "unknown field '" + item.key() + "'");

  auto string = [&](const char* name, bool required) -> std::string {
    auto it = j.find(name);
    if (it == j.end()) {
      if (required) failAtLine(file, line, std::string("missing field '") + name + "'");
      return {};
    }
    if (!it->is_string()) failAtLine(file, line, std::string("field '") + name + "' must be a string");
    return it->get<std::string>();
  };
  auto number = [&](const Json& v, const std::string& what) -> double {
    if (!v.is_number()) failAtLine(file, line, what + " must be a number");
    const double d = v.get<double>();
    if (!isNonNegativeFinite(d)) failAtLine(file, line, what + " must be a finite number, at least 0");
    return d;
  };

  TuningRecord r;
  r.workload = string("workload", true);
  if (r.workload.empty()) failAtLine(file, line, "field 'workload' is empty");
  r.target = string("target", true);
  if (r.target.empty()) failAtLine(file, line, "field 'target' is empty");
  r.func = string("func", true);
  const std::string trace_text = string("trace", true);
  const std::string status = string("status", true);
  const std::optional<RecordStatus> s = parseStatusName(status);
  if (!s) {
    std::string names;
    for (RecordStatus k : kStatuses) names += std::string(names.empty() ? "" : ", ") + statusName(k);
    failAtLine(file, line, "unknown status '" + status + "' (expected one of " + names + ")");
  }
  r.status = *s;

  auto runs = j.find("run_us");
  if (runs == j.end()) failAtLine(file, line, "missing field 'run_us'");
  if (!runs->is_array()) failAtLine(file, line, "field 'run_us' must be an array of numbers");
  for (size_t i = 0; i < runs->size(); ++i)
    r.run_us.push_back(number((*runs)[i], "run_us[" + std::to_string(i) + "]"));
  if (r.status != RecordStatus::ok && !r.run_us.empty())
    failAtLine(file, line, "a record with status '" + status + "' has timed runs (run_us must be empty)");

  auto flops = j.find("flops");
  if (flops == j.end()) failAtLine(file, line, "missing field 'flops'");
  r.flops = number(*flops, "field 'flops'");
  r.error = string("error", false);

  r.trace = parseTraceText(trace_text, file, line);
  return r;
}

// The record as one JSON line, without its newline. Throws mlcc::Error for
// a record the reader would refuse.
std::string serializeRecord(const TuningRecord& r, const std::string& trace_text) {
  if (r.workload.empty()) throw Error("tuning record without a workload key");
  if (r.target.empty()) throw Error("tuning record of " + r.workload + " without a target");
  if (r.status != RecordStatus::ok && !r.run_us.empty())
    throw Error("tuning record of " + r.workload + ": status " + statusName(r.status) +
                " with timed runs (run_us is for ok records)");
  for (double v : r.run_us)
    if (!isNonNegativeFinite(v))
      throw Error("tuning record of " + r.workload + ": run time " + std::to_string(v) +
                  " is not a finite number, at least 0");
  if (!isNonNegativeFinite(r.flops))
    throw Error("tuning record of " + r.workload + ": flops " + std::to_string(r.flops) +
                " is not a finite number, at least 0");
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  j["target"] = r.target;
  j["func"] = r.func;
  j["trace"] = trace_text;
  j["status"] = statusName(r.status);
  j["run_us"] = r.run_us;
  j["flops"] = r.flops;
  if (!r.error.empty()) j["error"] = r.error;
  // Invalid UTF-8 (a compiler's message in `error`) is replaced, not thrown.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string errnoText(int err) { return std::strerror(err); }

}  // namespace

const char* statusName(RecordStatus s) {
  switch (s) {
    case RecordStatus::ok: return "ok";
    case RecordStatus::build_error: return "build_error";
    case RecordStatus::run_error: return "run_error";
    case RecordStatus::wrong_result: return "wrong_result";
    case RecordStatus::timeout: return "timeout";
    case RecordStatus::crash: return "crash";
  }
  return "unknown";
}

std::optional<RecordStatus> parseStatusName(std::string_view name) {
  for (RecordStatus s : kStatuses)
    if (name == statusName(s)) return s;
  return std::nullopt;
}

double TuningRecord::medianUs() const {
  if (status != RecordStatus::ok || run_us.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> v = run_us;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Database::Impl {
  std::string display;  // the path as diagnostics name it
  int fd = -1;          // O_WRONLY | O_APPEND; -1 when read only
  std::string broken;   // why appends are refused after a failed one left a partial line
  std::vector<TuningRecord> records;
  std::vector<std::string> keys;                               // recordKey of each record
  std::unordered_set<std::string> key_set;                     // every recordKey
  std::unordered_map<std::string, std::vector<size_t>> group;  // groupKey -> indices, in file order

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  void add(TuningRecord r, const std::string& trace_text) {
    std::string key = recordKey(r.workload, r.target, trace_text);
    key_set.insert(key);
    keys.push_back(std::move(key));
    group[groupKey(r.workload, r.target)].push_back(records.size());
    records.push_back(std::move(r));
  }

  // Reads every record of `text`; returns the offset just past the last
  // line kept (the end of the text unless a torn last line was dropped).
  size_t load(const std::string& text) {
    size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
      ++line;
      const size_t end = text.find('\n', pos);
      // A write cut short (the process killed during append) leaves a last
      // line without its newline: not a record yet.
      if (end == std::string::npos) return pos;
      const bool last = end + 1 == text.size();
      bool not_json = false;
      try {
        TuningRecord r = parseRecord(text.substr(pos, end - pos), display, line, &not_json);
        // Keyed by the canonical text, however the line spelt the trace.
        std::string trace_text = ir::printTrace(r.trace);
        add(std::move(r), trace_text);
      } catch (const Error&) {
        // A last line that is not even JSON is torn too (the file's tail
        // lost in a crash); a last line that is JSON but not a record is
        // an error like any other, so that no data is dropped silently.
        if (last && not_json) return pos;
        throw;
      }
      pos = end + 1;
    }
    return pos;
  }
};

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;
Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;

Database Database::read(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->display = displayName(path);
  impl->load(readInput(path));
  return Database(std::move(impl));
}

Database Database::open(const std::string& path) {
  if (isStdStream(path)) throw Error("a tuning database to append to must be a file, not stdin/stdout");
  auto impl = std::make_unique<Impl>();
  impl->display = displayName(path);
  impl->fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (impl->fd < 0)
    throw Error(SourceLoc{impl->display, 0, 0}, "cannot open for appending: " + errnoText(errno));
  const std::string text = readInput(path);
  const size_t keep = impl->load(text);
  if (keep < text.size() && ::ftruncate(impl->fd, static_cast<off_t>(keep)) != 0)
    throw Error(SourceLoc{impl->display, 0, 0}, "cannot cut off the incomplete last line (at byte " +
                                                    std::to_string(keep) + "): " + errnoText(errno));
  return Database(std::move(impl));
}

void Database::append(const TuningRecord& r) {
  Impl& d = *impl_;
  if (d.fd < 0) throw Error(SourceLoc{d.display, 0, 0}, "cannot append: the database was opened read only");
  if (!d.broken.empty()) throw Error(SourceLoc{d.display, 0, 0}, d.broken);
  const std::string trace_text = ir::printTrace(r.trace);
  const std::string line = serializeRecord(r, trace_text) + "\n";
  struct stat st {};
  if (::fstat(d.fd, &st) != 0) throw Error(SourceLoc{d.display, 0, 0}, "cannot append: " + errnoText(errno));
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(d.fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Take back a partial line, so that the next append starts a line.
      const std::string message = "cannot append a record: " + errnoText(err);
      if (done > 0 && ::ftruncate(d.fd, st.st_size) != 0)
        d.broken = message + "; the partial line written could not be removed";
      throw Error(SourceLoc{d.display, 0, 0}, message);
    }
    done += static_cast<size_t>(n);
  }
  d.add(r, trace_text);
}

bool Database::contains(const std::string& workload, const std::string& target,
                        const std::string& trace_text) const {
  return impl_->key_set.count(recordKey(workload, target, trace_text)) > 0;
}

std::optional<TuningRecord> Database::best(const std::string& workload, const std::string& target) const {
  auto it = impl_->group.find(groupKey(workload, target));
  if (it == impl_->group.end()) return std::nullopt;
  const TuningRecord* best = nullptr;
  double best_us = std::numeric_limits<double>::infinity();
  for (size_t i : it->second) {
    const TuningRecord& r = impl_->records[i];
    const double us = r.medianUs();
    if (us < best_us) {
      best = &r;
      best_us = us;
    }
  }
  if (!best) return std::nullopt;
  return *best;
}

std::vector<TuningRecord> Database::records(const std::string& workload, const std::string& target) const {
  std::vector<TuningRecord> out;
  auto it = impl_->group.find(groupKey(workload, target));
  if (it == impl_->group.end()) return out;
  for (size_t i : it->second) out.push_back(impl_->records[i]);
  return out;
}

size_t Database::size() const { return impl_->records.size(); }

void Database::merge(const std::vector<std::string>& inputs, const std::string& output) {
  std::unordered_set<std::string> seen;
  std::string text;
  for (const std::string& input : inputs) {
    const Database db = read(input);
    for (size_t i = 0; i < db.impl_->records.size(); ++i) {
      if (!seen.insert(db.impl_->keys[i]).second) continue;
      const TuningRecord& r = db.impl_->records[i];
      text += serializeRecord(r, ir::printTrace(r.trace));
      text += '\n';
    }
  }
  writeOutputAtomic(output, text);
}

}  // namespace mlcc::tune
