// Test helpers and prim funcs shared by the loop and sampling tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"
#include "testlib.h"

namespace mlcc::test {

// 64x64x64 matmul with its reduction.
inline const std::string kMatmul = fixture("matmul_64.ir");

// An elementwise 2-D op.
inline const std::string kAdd = fixture("schedule_loops_check/add.ir");

// A loop over a symbolic extent.
inline const std::string kSymbolic = fixture("schedule_loops_check/symbolic.ir");

// A reduction over 10 elements (split by 4 does not divide it).
inline const std::string kRowSum = fixture("schedule_loops_check/row_sum.ir");

}  // namespace mlcc::test
