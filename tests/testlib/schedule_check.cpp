// Helpers of the schedule tests (see schedule_check.h).
#include "schedule_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "testlib.h"

namespace mlcc::test {

ir::PrimFunc parsePrim(const std::string& body) {
  ir::Module m = parseVerified(body);
  for (const auto& f : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&f)) return *p;
  ADD_FAILURE() << "no prim func in:\n" << body;
  return {};
}

namespace {

std::vector<int64_t> concreteShape(const ir::Buffer& b, const std::map<std::string, int64_t>& dims) {
  std::vector<int64_t> shape;
  for (const auto& d : b->shape) {
    int64_t v;
    if (ir::asConstInt(d, &v)) {
      shape.push_back(v);
    } else if (const auto* var = d->as<ir::VarNode>()) {
      auto it = dims.find(var->name);
      shape.push_back(it == dims.end() ? 5 : it->second);
    } else {
      ADD_FAILURE() << "parameter " << b->name << " has a computed dimension " << ir::printExpr(d);
      shape.push_back(1);
    }
  }
  return shape;
}

std::vector<ir::Tensor> runOn(const ir::PrimFunc& f, const std::map<std::string, int64_t>& dims,
                              uint64_t seed) {
  ir::Module m;
  ir::PrimFunc g = f;
  g.name = std::string("f");  // not from a literal: GCC 12 warns falsely (-Wrestrict) on that
  m.functions.push_back(g);
  interp::Interpreter in(m);
  std::vector<ir::Tensor> args;
  for (size_t i = 0; i < f.params.size(); ++i)
    args.push_back(interp::randomTensor(f.params[i]->dtype, concreteShape(f.params[i], dims), seed + i));
  std::vector<ir::Tensor*> ptrs;
  for (auto& t : args) ptrs.push_back(&t);
  in.runPrim("f", ptrs);
  return args;
}

}  // namespace

bool expectSameMeaning(const ir::PrimFunc& before, const ir::PrimFunc& after, double tol,
                       const std::map<std::string, int64_t>& dims, uint64_t seed) {
  if (before.params.size() != after.params.size()) {
    ADD_FAILURE() << "the schedule changed the parameters";
    return false;
  }
  std::vector<ir::Tensor> a, b;
  try {
    a = runOn(before, dims, seed);
    b = runOn(after, dims, seed);
  } catch (const mlcc::Error& e) {
    ADD_FAILURE() << "running failed: " << e.format() << "\nafter:\n" << ir::printFunction(after);
    return false;
  }
  for (size_t p = 0; p < a.size(); ++p) {
    if (a[p].shape() != b[p].shape()) {
      ADD_FAILURE() << "parameter " << p << " changed shape";
      return false;
    }
    for (int64_t i = 0; i < a[p].numel(); ++i) {
      double x = a[p].at(i), y = b[p].at(i);
      if (!(std::fabs(x - y) <= tol * (1 + std::fabs(x))) && !(std::isnan(x) && std::isnan(y))) {
        ADD_FAILURE() << "parameter %" << before.params[p]->name << " differs at element " << i << ": " << x
                      << " before, " << y << " after the schedule:\n"
                      << ir::printFunction(after);
        return false;
      }
    }
  }
  return true;
}

void expectScheduled(const ir::PrimFunc& before, const ir::PrimFunc& scheduled, double tol,
                     const std::map<std::string, int64_t>& dims) {
  expectSameMeaning(before, scheduled, tol, dims);
  ir::PrimFunc replayed = schedule::replayTrace(before, scheduled.trace);
  EXPECT_TRUE(ir::structuralEqual(replayed, scheduled)) << "replay differs:\n"
                                                        << ir::printFunction(replayed) << "\nvs\n"
                                                        << ir::printFunction(scheduled);
  ir::PrimFunc reparsed = parsePrim(ir::printFunction(scheduled));
  EXPECT_TRUE(ir::structuralEqual(reparsed, scheduled)) << "print/parse differs:\n"
                                                        << ir::printFunction(reparsed);
  EXPECT_TRUE(ir::structuralEqual(schedule::replayTrace(before, reparsed.trace), scheduled))
      << "replay of the printed trace differs";
}

void expectStructure(const ir::PrimFunc& scheduled, const std::string& expected) {
  ir::PrimFunc want = parsePrim(expected);
  EXPECT_TRUE(ir::structuralEqual(scheduled, want, {.compare_traces = false}))
      << "got:\n"
      << ir::printFunction(scheduled) << "want:\n"
      << ir::printFunction(want);
}

void expectScheduledAs(const ir::PrimFunc& before, const ir::PrimFunc& scheduled, const std::string& expected,
                       double tol, const std::map<std::string, int64_t>& dims) {
  expectStructure(scheduled, expected);
  expectScheduled(before, scheduled, tol, dims);
}

void expectScheduleCase(const ScheduleCase& c) {
  ir::PrimFunc f = parsePrim(c.input);
  schedule::Schedule sch(f);
  c.apply(sch);
  expectScheduledAs(f, sch.func(), c.expected, 1e-5, c.dims);
}

void PrintTo(const ScheduleCase& c, std::ostream* os) { *os << c.name; }

void expectScheduleError(const std::function<void()>& fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "expected a schedule error containing \"" << text << "\"";
  } catch (const schedule::ScheduleError& e) {
    EXPECT_NE(e.message().find(text), std::string::npos) << "message: " << e.message();
  } catch (const mlcc::Error& e) {
    ADD_FAILURE() << "expected a ScheduleError, got mlcc::Error: " << e.message();
  }
}

}  // namespace mlcc::test
