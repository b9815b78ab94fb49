// Test helpers and prim funcs shared by the loop and sampling tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"

namespace mlcc::test {

// 64x64x64 matmul with its reduction.
inline const char* kMatmul = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      for %k in 0..64 {
        block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k)) {
          reads(%A[%vi, %vk], %B[%vk, %vj])
          writes(%C[%vi, %vj])
          init {
            %C[%vi, %vj] = 0.0
          }
          %C[%vi, %vj] = %C[%vi, %vj] + %A[%vi, %vk] * %B[%vk, %vj]
        }
      }
    }
  }
}
)";

// An elementwise 2-D op.
inline const char* kAdd = R"(
prim @add(%a: f32[16, 32], %b: f32[16, 32], %c: f32[16, 32]) {
  for %i in 0..16 {
    for %j in 0..32 {
      block "add" (%vi = spatial(16, %i), %vj = spatial(32, %j)) {
        reads(%a[%vi, %vj], %b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %a[%vi, %vj] + %b[%vi, %vj]
      }
    }
  }
}
)";

// A loop over a symbolic extent.
inline const char* kSymbolic = R"(
prim @relu(%x: f32[n, 8], %y: f32[n, 8]) {
  for %i in 0..n {
    for %j in 0..8 {
      block "relu" (%vi = spatial(n, %i), %vj = spatial(8, %j)) {
        reads(%x[%vi, %vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = max(%x[%vi, %vj], 0.0)
      }
    }
  }
}
)";

// A reduction over 10 elements (split by 4 does not divide it).
inline const char* kRowSum = R"(
prim @rowsum(%x: f32[6, 10], %y: f32[6]) {
  for %i in 0..6 {
    for %k in 0..10 {
      block "sum" (%vi = spatial(6, %i), %vk = reduce(10, %k)) {
        reads(%x[%vi, %vk])
        writes(%y[%vi])
        init {
          %y[%vi] = 0.0
        }
        %y[%vi] = %y[%vi] + %x[%vi, %vk]
      }
    }
  }
}
)";

}  // namespace mlcc::test
