// The tuning database (libs/tune database.h): round trips of records with
// real schedule traces, the line format, resuming after a torn last line,
// errors at FILE:LINE for malformed and wrongly typed records, contains(),
// best(), merge, and a file left by a writer killed with SIGKILL mid-loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "mlcc/ir/printer.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/tune/database.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::tune;
using mlcc::test::errorAt;
using mlcc::test::readFile;
using mlcc::test::TempDir;
using mlcc::test::writeBytes;

namespace {

const char* kTarget = "llvm -mcpu=x86-64 -num-cores=4";

ir::PrimFunc matmul() {
  ir::Module m = test::parseVerified(test::fixture("matmul_64.ir"));
  return std::get<ir::PrimFunc>(m.functions.at(0));
}

// The trace of a 64 x 64 x 64 matmul with i split in two by a sampled
// perfect tile whose decision is [64 / inner, inner].
ir::Trace tiledTrace(int64_t inner) {
  schedule::Schedule s(matmul());
  schedule::BlockRV c = s.getBlock("C");
  std::vector<schedule::LoopRV> loops = s.getLoops(c);
  std::vector<schedule::ExprRV> tile = s.samplePerfectTile(loops[0], 2, 64);
  s.split(loops[0], {tile[0], tile[1]});
  ir::Trace t = s.func().trace;
  for (ir::TraceInst& inst : t.insts)
    if (inst.name == "sample_perfect_tile") inst.decision = ir::AttrValue::ints({64 / inner, inner});
  return t;
}

TuningRecord record(const std::string& workload, const std::string& target, int64_t inner,
                    std::vector<double> run_us, RecordStatus status = RecordStatus::ok) {
  TuningRecord r;
  r.workload = workload;
  r.target = target;
  r.func = "mm";
  r.trace = tiledTrace(inner);
  r.status = status;
  r.run_us = std::move(run_us);
  r.flops = 2.0 * 64 * 64 * 64;
  if (status != RecordStatus::ok) r.error = std::string(statusName(status)) + ": \"details\"\nline 2";
  return r;
}

void expectSameRecord(const TuningRecord& a, const TuningRecord& b) {
  EXPECT_EQ(a.workload, b.workload);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.func, b.func);
  EXPECT_EQ(ir::printTrace(a.trace), ir::printTrace(b.trace));
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.run_us, b.run_us);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.error, b.error);
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

// The text of one record line as append writes it.
std::string lineFor(const TuningRecord& r) {
  TempDir dir;
  Database db = Database::open(dir.file("one.db"));
  db.append(r);
  std::string text = readFile(dir.file("one.db"));
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  return text.substr(0, text.size() - 1);
}

TEST(TuneDatabase, StatusNamesRoundTrip) {
  for (RecordStatus s : {RecordStatus::ok, RecordStatus::build_error, RecordStatus::run_error,
                         RecordStatus::wrong_result, RecordStatus::timeout, RecordStatus::crash})
    EXPECT_EQ(parseStatusName(statusName(s)), s) << statusName(s);
  EXPECT_STREQ(statusName(RecordStatus::build_error), "build_error");
  EXPECT_EQ(parseStatusName("OK"), std::nullopt);
  EXPECT_EQ(parseStatusName(""), std::nullopt);
}

TEST(TuneDatabase, MedianUs) {
  EXPECT_EQ(record("w", kTarget, 8, {30, 10, 20}).medianUs(), 20);
  EXPECT_EQ(record("w", kTarget, 8, {4, 1, 3, 2}).medianUs(), 2.5);
  EXPECT_TRUE(std::isinf(record("w", kTarget, 8, {}).medianUs()));
  TuningRecord failed = record("w", kTarget, 8, {}, RecordStatus::timeout);
  EXPECT_TRUE(std::isinf(failed.medianUs()));
  failed.run_us = {1.0};  // not ok: never counts, whatever its runs
  EXPECT_TRUE(std::isinf(failed.medianUs()));
}

TEST(TuneDatabase, RoundTripWithRealTraces) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  const std::vector<TuningRecord> written = {
      record("0123456789abcdef", kTarget, 8, {12.5, 11.25, 13}),
      record("0123456789abcdef", kTarget, 16, {}, RecordStatus::build_error),
      record("fedcba9876543210", "llvm", 4, {0.1, 1e-7, 123456.789}),
  };
  {
    Database db = Database::open(path);  // created
    EXPECT_EQ(db.size(), 0u);
    EXPECT_TRUE(test::fileExists(path));
    for (const TuningRecord& r : written) db.append(r);
    EXPECT_EQ(db.size(), 3u);
  }
  // The decisions made it into the text (and so into the file).
  const std::string trace8 = ir::printTrace(written[0].trace);
  EXPECT_NE(trace8.find("sample_perfect_tile("), std::string::npos) << trace8;
  EXPECT_NE(trace8.find("decision [8, 8]"), std::string::npos) << trace8;
  EXPECT_NE(trace8.find("split("), std::string::npos) << trace8;

  for (bool for_append : {false, true}) {
    Database db = for_append ? Database::open(path) : Database::read(path);
    ASSERT_EQ(db.size(), 3u);
    std::vector<TuningRecord> first = db.records("0123456789abcdef", kTarget);
    ASSERT_EQ(first.size(), 2u);
    expectSameRecord(first[0], written[0]);
    expectSameRecord(first[1], written[1]);
    std::vector<TuningRecord> second = db.records("fedcba9876543210", "llvm");
    ASSERT_EQ(second.size(), 1u);
    expectSameRecord(second[0], written[2]);
    EXPECT_TRUE(db.records("0123456789abcdef", "llvm").empty());
    // The trace read back still schedules the function: the split by 8.
    ir::PrimFunc replayed = schedule::replayTrace(matmul(), first[0].trace);
    EXPECT_EQ(ir::printTrace(replayed.trace), trace8);
  }
}

TEST(TuneDatabase, LineFormat) {
  TuningRecord ok = record("0123456789abcdef", kTarget, 8, {12.5, 11.0});
  const std::string line = lineFor(ok);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"workload", "target", "func", "trace", "status", "run_us", "flops"}));
  EXPECT_EQ(j["workload"], "0123456789abcdef");
  EXPECT_EQ(j["target"], kTarget);
  EXPECT_EQ(j["func"], "mm");
  EXPECT_EQ(j["trace"], ir::printTrace(ok.trace));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["run_us"], nlohmann::ordered_json::array({12.5, 11.0}));
  EXPECT_EQ(j["flops"].get<double>(), 2.0 * 64 * 64 * 64);

  TuningRecord failed = record("0123456789abcdef", kTarget, 8, {}, RecordStatus::crash);
  nlohmann::json f = nlohmann::json::parse(lineFor(failed));
  EXPECT_EQ(f["status"], "crash");
  EXPECT_EQ(f["error"], failed.error);
  EXPECT_TRUE(f["run_us"].empty());
}

TEST(TuneDatabase, AppendRefusesRecordsTheReaderWouldRefuse) {
  TempDir dir;
  Database db = Database::open(dir.file("tune.db"));
  TuningRecord inf = record("w", kTarget, 8, {1.0, INFINITY});
  EXPECT_NE(test::errorOf([&] { db.append(inf); }).find("not a finite number"), std::string::npos);
  TuningRecord runs_of_failed = record("w", kTarget, 8, {1.0}, RecordStatus::run_error);
  EXPECT_NE(test::errorOf([&] { db.append(runs_of_failed); }).find("run_us is for ok records"),
            std::string::npos);
  TuningRecord no_workload = record("", kTarget, 8, {1.0});
  EXPECT_NE(test::errorOf([&] { db.append(no_workload); }).find("without a workload"), std::string::npos);
  EXPECT_EQ(db.size(), 0u);
  EXPECT_EQ(readFile(dir.file("tune.db")), "");
}

TEST(TuneDatabase, ResumeAfterTruncatedLastLine) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  const TuningRecord a = record("w", kTarget, 8, {10});
  const TuningRecord b = record("w", kTarget, 16, {20});
  const TuningRecord c = record("w", kTarget, 32, {30});
  const std::string line_a = lineFor(a) + "\n";
  const std::string line_b = lineFor(b) + "\n";
  // A kill during the second append: half of its line, no newline.
  const std::string cut = line_a + line_b.substr(0, line_b.size() / 2);
  writeBytes(path, cut);

  {
    Database db = Database::read(path);  // reading leaves the file alone
    EXPECT_EQ(db.size(), 1u);
    EXPECT_EQ(readFile(path), cut);
  }
  {
    Database db = Database::open(path);  // opening to append cuts the torn line off
    ASSERT_EQ(db.size(), 1u);
    EXPECT_EQ(readFile(path), line_a);
    EXPECT_TRUE(db.contains("w", kTarget, ir::printTrace(a.trace)));
    EXPECT_FALSE(db.contains("w", kTarget, ir::printTrace(b.trace)));
    db.append(c);
  }
  EXPECT_EQ(readFile(path), line_a + lineFor(c) + "\n");
  Database db = Database::read(path);
  std::vector<TuningRecord> rs = db.records("w", kTarget);
  ASSERT_EQ(rs.size(), 2u);
  expectSameRecord(rs[0], a);
  expectSameRecord(rs[1], c);

  // A whole line without its newline is torn too: append had not returned.
  writeBytes(path, line_a + line_b.substr(0, line_b.size() - 1));
  EXPECT_EQ(Database::open(path).size(), 1u);
  EXPECT_EQ(readFile(path), line_a);
  // So is a last line that is not JSON at all (a tail lost in a crash).
  writeBytes(path, line_a + std::string(40, '\0') + "\n");
  EXPECT_EQ(Database::open(path).size(), 1u);
  EXPECT_EQ(readFile(path), line_a);
}

TEST(TuneDatabase, MalformedMiddleLineNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  const std::string good = lineFor(record("w", kTarget, 8, {10})) + "\n";
  const std::string bad = good + "{\"workload\": \"w\", oops}\n" + good;
  writeBytes(path, bad);
  const std::string error = errorAt([&] { Database::open(path); });
  EXPECT_NE(error.find(path + ":2:"), std::string::npos) << error;
  EXPECT_NE(error.find("not a JSON record"), std::string::npos) << error;
  EXPECT_EQ(error.find("json.exception"), std::string::npos) << error;
  EXPECT_EQ(readFile(path), bad);  // a failed open changes nothing
  const std::string read_error = errorAt([&] { Database::read(path); });
  EXPECT_NE(read_error.find(path + ":2:"), std::string::npos) << read_error;

  // An empty line in the middle is no record either.
  writeBytes(path, good + "\n" + good);
  EXPECT_NE(errorAt([&] { Database::read(path); }).find(path + ":2:"), std::string::npos);
}

TEST(TuneDatabase, WrongFieldsAreErrorsAtTheirLine) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  const std::string good = lineFor(record("w", kTarget, 8, {10}));
  const nlohmann::ordered_json base = nlohmann::ordered_json::parse(good);
  struct Case {
    std::function<void(nlohmann::ordered_json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](auto& j) { j["flops"] = "262144"; }, "field 'flops' must be a number"},
      {[](auto& j) { j["flops"] = -1; }, "field 'flops' must be a finite number"},
      {[](auto& j) { j["flops"] = "@huge@"; }, "number overflow"},
      {[](auto& j) { j["run_us"] = "10"; }, "field 'run_us' must be an array"},
      {[](auto& j) {
         j["run_us"] = nlohmann::ordered_json::array({1.5, "2"});
       },
       "run_us[1] must be a number"},
      {[](auto& j) { j["run_us"] = nlohmann::ordered_json::array({true}); }, "run_us[0] must be a number"},
      {[](auto& j) { j["workload"] = 17; }, "field 'workload' must be a string"},
      {[](auto& j) { j["target"] = nullptr; }, "field 'target' must be a string"},
      {[](auto& j) { j["trace"] = nlohmann::ordered_json::array(); }, "field 'trace' must be a string"},
      {[](auto& j) { j["error"] = 3; }, "field 'error' must be a string"},
      {[](auto& j) { j["status"] = "fast"; }, "unknown status 'fast'"},
      {[](auto& j) { j["status"] = "timeout"; }, "has timed runs"},
      {[](auto& j) { j.erase("func"); }, "missing field 'func'"},
      {[](auto& j) { j.erase("run_us"); }, "missing field 'run_us'"},
      {[](auto& j) { j["runs_us"] = j["run_us"]; }, "unknown field 'runs_us'"},
      {[](auto& j) { j["trace"] = "schedule @f {\n}\n"; }, "not the text of a trace"},
      {[](auto& j) { j["trace"] = "trace {\n  %b0 = get_block(\"C\"\n}\n"; }, "field 'trace' (at line 3"},
      {[](auto& j) { j["trace"] = "trace {\n}\nschedule @g {\n}\n"; }, "after the trace's closing"},
      {[](auto& j) {
         j = nlohmann::ordered_json::array({1, 2});
       },
       "must be a JSON object"},
  };
  for (const Case& c : cases) {
    nlohmann::ordered_json j = base;
    c.edit(j);
    std::string line = j.dump();
    // "@huge@" stands for 1e400: valid JSON, beyond a double (nlohmann::json cannot make it).
    if (const size_t at = line.find("\"@huge@\""); at != std::string::npos) line.replace(at, 8, "1e400");
    // On line 2 of 3, and as the last line: a JSON record that is wrong is
    // an error even there (only a torn, non-JSON last line is dropped).
    for (const std::string& text : {good + "\n" + line + "\n" + good + "\n", good + "\n" + line + "\n"}) {
      writeBytes(path, text);
      const std::string error = errorAt([&] { Database::open(path); });
      EXPECT_NE(error.find(path + ":2: error: "), std::string::npos) << line << "\n" << error;
      EXPECT_NE(error.find(c.expected), std::string::npos) << line << "\n" << error;
      EXPECT_EQ(readFile(path), text);
    }
  }
}

TEST(TuneDatabase, OpenAndAppendErrorsNameTheFile) {
  TempDir dir;
  const std::string missing_dir = dir.file("no/such/dir/tune.db");
  std::string error = errorAt([&] { Database::open(missing_dir); });
  EXPECT_NE(error.find(missing_dir), std::string::npos) << error;
  error = errorAt([&] { Database::read(dir.file("absent.db")); });
  EXPECT_NE(error.find(dir.file("absent.db")), std::string::npos) << error;
  EXPECT_FALSE(test::fileExists(dir.file("absent.db")));  // read creates nothing

  Database::open(dir.file("tune.db"));
  Database ro = Database::read(dir.file("tune.db"));
  error = errorAt([&] { ro.append(record("w", kTarget, 8, {1})); });
  EXPECT_NE(error.find(dir.file("tune.db")), std::string::npos) << error;
  EXPECT_NE(error.find("read only"), std::string::npos) << error;
}

TEST(TuneDatabase, Contains) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  const TuningRecord a = record("w1", kTarget, 8, {10});
  const TuningRecord failed = record("w1", kTarget, 16, {}, RecordStatus::wrong_result);
  {
    Database db = Database::open(path);
    EXPECT_FALSE(db.contains("w1", kTarget, ir::printTrace(a.trace)));
    db.append(a);
    db.append(failed);
    EXPECT_TRUE(db.contains("w1", kTarget, ir::printTrace(a.trace)));
  }
  Database db = Database::open(path);
  EXPECT_TRUE(db.contains("w1", kTarget, ir::printTrace(a.trace)));
  EXPECT_TRUE(db.contains("w1", kTarget, ir::printTrace(failed.trace)));  // failures are not measured again
  EXPECT_FALSE(db.contains("w1", kTarget, ir::printTrace(tiledTrace(4))));
  EXPECT_FALSE(db.contains("w2", kTarget, ir::printTrace(a.trace)));
  EXPECT_FALSE(db.contains("w1", "llvm", ir::printTrace(a.trace)));
  // No confusion between where workload ends and target begins.
  EXPECT_FALSE(db.contains("w", std::string("1") + kTarget, ir::printTrace(a.trace)));
}

TEST(TuneDatabase, BestIsTheFastestOkRecord) {
  TempDir dir;
  Database db = Database::open(dir.file("tune.db"));
  EXPECT_EQ(db.best("w", kTarget), std::nullopt);
  db.append(record("w", kTarget, 1, {30, 10, 20}));  // median 20
  db.append(record("w", kTarget, 2, {}, RecordStatus::build_error));
  db.append(record("w", kTarget, 4, {15, 17, 16}));  // median 16: the best
  db.append(record("w", kTarget, 8, {}, RecordStatus::timeout));
  db.append(record("w", kTarget, 16, {5, 100, 90}));  // fastest run, median 90
  db.append(record("w", kTarget, 32, {}));            // ok without runs: never best
  db.append(record("w", "llvm", 32, {1}));            // another target
  db.append(record("v", kTarget, 32, {1}));           // another workload
  db.append(record("f", kTarget, 4, {}, RecordStatus::crash));
  {
    const Database d = Database::read(dir.file("tune.db"));
    std::optional<TuningRecord> best = d.best("w", kTarget);
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->run_us, (std::vector<double>{15, 17, 16}));
    EXPECT_EQ(ir::printTrace(best->trace), ir::printTrace(tiledTrace(4)));
    EXPECT_EQ(d.best("w", "llvm")->run_us, std::vector<double>{1});
    EXPECT_EQ(d.best("f", kTarget), std::nullopt);  // only a failed record
    EXPECT_EQ(d.best("nothing", kTarget), std::nullopt);
  }
  EXPECT_EQ(db.best("w", kTarget)->medianUs(), 16);
}

TEST(TuneDatabase, MergeKeepsTheFirstOfDuplicates) {
  TempDir dir;
  const TuningRecord r1 = record("w", kTarget, 1, {10});
  const TuningRecord r2 = record("w", kTarget, 2, {20});
  TuningRecord r2_again = record("w", kTarget, 2, {5});  // same workload, target and trace
  const TuningRecord r3 = record("w", "llvm", 2, {30});  // same trace, another target
  {
    Database a = Database::open(dir.file("a.db"));
    a.append(r1);
    a.append(r2);
    Database b = Database::open(dir.file("b.db"));
    b.append(r2_again);
    b.append(r3);
  }
  writeBytes(dir.file("out.db"), "old contents\n");
  Database::merge({dir.file("a.db"), dir.file("b.db")}, dir.file("out.db"));
  Database out = Database::read(dir.file("out.db"));
  EXPECT_EQ(out.size(), 3u);
  std::vector<TuningRecord> w = out.records("w", kTarget);
  ASSERT_EQ(w.size(), 2u);
  expectSameRecord(w[0], r1);
  expectSameRecord(w[1], r2);  // not r2_again
  ASSERT_EQ(out.records("w", "llvm").size(), 1u);
  expectSameRecord(out.records("w", "llvm")[0], r3);
  EXPECT_EQ(out.best("w", kTarget)->run_us, std::vector<double>{10});
  // Lines as append writes them; no temporary file left beside the output.
  EXPECT_EQ(readFile(dir.file("out.db")), lineFor(r1) + "\n" + lineFor(r2) + "\n" + lineFor(r3) + "\n");
  EXPECT_EQ(test::listDir(dir.path()), (std::vector<std::string>{"a.db", "b.db", "out.db"}));

  // Into one of its inputs, with a torn line in the other: read first, then written.
  writeBytes(dir.file("b.db"), readFile(dir.file("b.db")) + "{\"workload\": \"w\", \"tar");
  Database::merge({dir.file("b.db"), dir.file("a.db")}, dir.file("a.db"));
  std::vector<TuningRecord> merged = Database::read(dir.file("a.db")).records("w", kTarget);
  ASSERT_EQ(merged.size(), 2u);
  expectSameRecord(merged[0], r2_again);
  expectSameRecord(merged[1], r1);

  // A malformed input stops the merge before anything is written.
  writeBytes(dir.file("bad.db"), "nonsense\n" + lineFor(r1) + "\n");
  const std::string before = readFile(dir.file("out.db"));
  const std::string error = errorAt([&] {
    Database::merge({dir.file("a.db"), dir.file("bad.db")}, dir.file("out.db"));
  });
  EXPECT_NE(error.find(dir.file("bad.db") + ":1:"), std::string::npos) << error;
  EXPECT_EQ(readFile(dir.file("out.db")), before);
}

// The size of a file and whether it ends in the middle of a line (a write
// in progress), read through `fd`.
std::pair<size_t, bool> sizeAndMidLine(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size == 0) return {0, false};
  char last = '\n';
  if (pread(fd, &last, 1, st.st_size - 1) != 1) return {static_cast<size_t>(st.st_size), false};
  return {static_cast<size_t>(st.st_size), last != '\n'};
}

TEST(TuneDatabase, WriterKilledMidLoopLeavesAReadableFile) {
  TempDir dir;
  const std::string path = dir.file("tune.db");
  // Records of 1 MiB (the error text) take a while to write, and the writer
  // is killed while the file ends mid-line when it can be caught there;
  // small ok records, whose run is the record's index, check the order.
  TuningRecord big = record("w", kTarget, 8, {}, RecordStatus::build_error);
  big.error = std::string(1 << 20, 'x');
  TuningRecord ok = record("w", kTarget, 8, {});
  int torn_rounds = 0;
  size_t records = 0;
  for (int round = 0; round < 4; ++round) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        Database db = Database::open(path);
        for (;;) {
          ok.run_us = {static_cast<double>(db.size())};
          db.append(ok);
          db.append(big);
        }
      } catch (...) {
      }
      _exit(1);
    }
    // Kill it a few milliseconds in: once it has written two large records
    // more, at a moment when the file ends mid-line if it catches one.
    const size_t start_size = std::filesystem::exists(path) ? std::filesystem::file_size(path) : 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    int fd = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        auto [size, mid_line] = sizeAndMidLine(fd);
        if (size > start_size + 2 * big.error.size() && mid_line) break;
        if (size > start_size + 16 * big.error.size()) break;  // not caught mid-line: kill it anyway
      }
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer stopped by itself: " << status;
    ASSERT_GE(fd, 0) << "the writer never created " << path;
    const auto [written, torn] = sizeAndMidLine(fd);
    ::close(fd);
    torn_rounds += torn;

    Database db = Database::open(path);
    ASSERT_GE(db.size(), records + 2) << "round " << round;
    records = db.size();
    // Every complete line is a record, in order; the torn one is gone.
    const std::string text = readFile(path);
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(linesOf(text).size(), db.size());
    if (torn)
      EXPECT_LT(text.size(), written);
    else
      EXPECT_EQ(text.size(), written);
    std::vector<TuningRecord> rs = db.records("w", kTarget);
    ASSERT_EQ(rs.size(), db.size());
    for (size_t i = 0; i < rs.size(); ++i) {
      if (rs[i].status == RecordStatus::ok) {
        EXPECT_EQ(rs[i].run_us, std::vector<double>{static_cast<double>(i)}) << "record " << i;
      } else {
        EXPECT_EQ(rs[i].status, RecordStatus::build_error) << "record " << i;
        EXPECT_EQ(rs[i].error.size(), big.error.size()) << "record " << i;
        EXPECT_EQ(rs[i - 1].status, RecordStatus::ok) << "record " << i;
      }
    }
  }
  std::printf("rounds that left a torn last line: %d of 4\n", torn_rounds);
  // The database takes appends again.
  Database db = Database::open(path);
  db.append(record("w", kTarget, 16, {1}));
  EXPECT_EQ(Database::read(path).size(), records + 1);
}

TEST(TuneDatabase, TheSchemaDocumentsExampleReads) {
  // artifacts_schema/tuning-database.md shows example lines; the reader
  // takes them (tests/cli/schemas.sh checks them against the JSON schema).
  const std::string doc = readFile(std::string(MLCC_SOURCE_DIR) + "/artifacts_schema/tuning-database.md");
  std::string examples;
  for (const std::string& line : linesOf(doc))
    if (line.rfind("{\"workload\"", 0) == 0) examples += line + "\n";
  TempDir dir;
  writeBytes(dir.file("example.db"), examples);
  Database db = Database::read(dir.file("example.db"));
  EXPECT_GE(db.size(), 2u);
  EXPECT_EQ(db.size(), linesOf(examples).size());
}

}  // namespace
