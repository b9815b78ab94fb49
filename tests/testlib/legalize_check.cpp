// Legalized prim func vs reference kernel (see legalize_check.h).
#include "legalize_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace mlcc::test {

namespace {

std::vector<ir::Type> typesOf(const std::vector<ir::Tensor>& ts, const ir::Var& batch) {
  std::vector<ir::Type> types;
  for (const auto& t : ts) {
    ir::Type ty = ir::Type::tensor(t.dtype(), t.shape());
    if (batch && !ty.shape.empty()) ty.shape[0] = batch;
    types.push_back(ty);
  }
  return types;
}

// Whether every operand has rank >= 1 and the same first dimension.
bool sharedBatch(const std::vector<ir::Tensor>& ts) {
  if (ts.empty()) return false;
  for (const auto& t : ts)
    if (t.rank() == 0 || t.shape()[0] != ts[0].shape()[0]) return false;
  return true;
}

void checkOnce(const std::string& op, const std::vector<ir::Tensor>& operands, const ir::Attrs& attrs,
               const std::vector<ir::Tensor>& expected, const ir::Var& batch,
               const LegalizeCheckOptions& opts) {
  std::string what = "op '" + op + "'" + (batch ? " with a symbolic batch" : "");
  ir::Module m;
  try {
    m.functions.push_back(ops::legalizeOp(op, typesOf(operands, batch), attrs, "legalized"));
    ir::verifyModule(m, mlcc::ops::opTypeInfo());
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": legalize: " << e.format();
    return;
  }
  std::vector<ir::Tensor> args = operands, outs;
  for (const auto& e : expected) outs.push_back(ir::Tensor::zeros(e.dtype(), e.shape()));
  std::vector<ir::Tensor*> ptrs;
  for (auto& a : args) ptrs.push_back(&a);
  for (auto& o : outs) ptrs.push_back(&o);
  try {
    interp::Interpreter in(m);
    in.runPrim("legalized", ptrs);
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": running the prim func: " << e.format() << "\n" << ir::printModule(m);
    return;
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    int mismatches = 0;
    std::ostringstream report;
    for (int64_t i = 0; i < expected[k].numel(); ++i) {
      double want = expected[k].at(i), got = outs[k].at(i);
      bool ok = (std::isnan(want) && std::isnan(got)) || want == got ||
                std::abs(got - want) <= opts.atol + opts.rtol * std::abs(want);
      if (!ok && mismatches++ < 5)
        report << "  [" << i << "] legalized " << got << ", kernel " << want << "\n";
    }
    if (mismatches)
      ADD_FAILURE() << what << ", result " << k << ": " << mismatches << " of " << expected[k].numel()
                    << " elements differ\n"
                    << report.str() << ir::printModule(m);
  }
}

}  // namespace

void expectLegalizeMatchesKernel(const std::string& op, const std::vector<ir::Tensor>& operands,
                                 const ir::Attrs& attrs, const LegalizeCheckOptions& opts) {
  std::vector<ir::Tensor> expected;
  try {
    expected = ops::computeOp(op, operands, attrs);
  } catch (const Error& e) {
    ADD_FAILURE() << "op '" << op << "': reference kernel: " << e.format();
    return;
  }
  checkOnce(op, operands, attrs, expected, nullptr, opts);
  if (opts.also_symbolic_batch && sharedBatch(operands))
    checkOnce(op, operands, attrs, expected, ir::makeVar("n"), opts);
}

void expectSymbolicSpatialMatchesKernel(const char* op, const std::vector<ir::Tensor>& operands,
                                        const ir::Attrs& attrs, double tol) {
  SCOPED_TRACE(std::string(op) + " with symbolic h, w on " + shapeText(operands[0].shape()));
  std::vector<ir::Type> types;
  for (const auto& t : operands) types.push_back(ir::Type::tensor(t.dtype(), t.shape()));
  types[0].shape[2] = ir::makeVar("h");
  types[0].shape[3] = ir::makeVar("w");
  std::vector<ir::Tensor> expected = ops::computeOp(op, operands, attrs);
  ir::Module m;
  try {
    m.functions.push_back(ops::legalizeOp(op, types, attrs, "f"));
    ir::verifyModule(m, mlcc::ops::opTypeInfo());
  } catch (const Error& e) {
    ADD_FAILURE() << e.format();
    return;
  }
  std::vector<ir::Tensor> args = operands;
  ir::Tensor out = ir::Tensor::zeros(expected[0].dtype(), expected[0].shape());
  std::vector<ir::Tensor*> ptrs;
  for (auto& a : args) ptrs.push_back(&a);
  ptrs.push_back(&out);
  interp::Interpreter(m).runPrim("f", ptrs);
  for (int64_t i = 0; i < out.numel(); ++i)
    ASSERT_NEAR(out.at(i), expected[0].at(i), tol * (1 + std::abs(expected[0].at(i)))) << i;
}

void expectEveryOpHasALegalization(const std::vector<const char*>& ops) {
  for (const char* op : ops) {
    const auto* def = ops::findOp(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(static_cast<bool>(def->legalize)) << op;
  }
}

}  // namespace mlcc::test
