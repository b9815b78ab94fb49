// Helpers of the schedule tests: every primitive is checked by running the
// prim func before and after it through the interpreter on the same inputs.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {
class Schedule;
}

namespace mlcc::test {

// The only prim func of a module parsed (and verified) from `body` (the
// text after the "mlcc.ir 1" header line).
ir::PrimFunc parsePrim(const std::string& body);

// Runs both prim funcs on the same random parameters (symbolic dimensions
// take the values in `dims`, by name, default 5) and expects every
// parameter to end up equal: |a - b| <= tol * (1 + |a|). Returns whether
// they matched (a GoogleTest failure is added otherwise).
bool expectSameMeaning(const ir::PrimFunc& before, const ir::PrimFunc& after, double tol = 1e-5,
                       const std::map<std::string, int64_t>& dims = {}, uint64_t seed = 1);

// Expects `scheduled` (made from `before` by a schedule) to mean the same as
// `before` (expectSameMeaning with tol and dims), to be reproduced by
// replaying its trace on `before`, and to print and parse back to itself,
// whose trace replays to it too.
void expectScheduled(const ir::PrimFunc& before, const ir::PrimFunc& scheduled, double tol = 1e-5,
                     const std::map<std::string, int64_t>& dims = {});

// Expects `scheduled` to have the structure of `expected` (IR text of the
// function; traces and names aside), printing both when it has not.
void expectStructure(const ir::PrimFunc& scheduled, const std::string& expected);

// expectScheduled, and `scheduled` has the structure of `expected` (IR text of the
// function; traces and names aside).
void expectScheduledAs(const ir::PrimFunc& before, const ir::PrimFunc& scheduled, const std::string& expected,
                       double tol = 1e-5, const std::map<std::string, int64_t>& dims = {});

// Expects `fn` to throw mlcc::schedule::ScheduleError whose message
// contains `text`.
void expectScheduleError(const std::function<void()>& fn, const std::string& text);

// One row of a table of schedule results: the prim func parsed from
// `input`, scheduled by `apply`, is expected to be `expected`
// (expectScheduledAs, with `dims` for symbolic dimensions). `name` names
// the row's test (letters, digits and '_').
struct ScheduleCase {
  std::string name;
  std::string input;
  std::function<void(schedule::Schedule&)> apply;
  std::string expected;
  std::map<std::string, int64_t> dims = {};
};

// Runs one row: parse, schedule, expectScheduledAs.
void expectScheduleCase(const ScheduleCase& c);

// Prints the row's name (GoogleTest's printer for parameters).
void PrintTo(const ScheduleCase& c, std::ostream* os);

// The test name of a row, for INSTANTIATE_TEST_SUITE_P.
struct ScheduleCaseName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return info.param.name;
  }
};

}  // namespace mlcc::test
