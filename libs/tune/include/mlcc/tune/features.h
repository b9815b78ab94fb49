// Features of a scheduled prim func for the cost model (after Ansor and
// MetaSchedule's per-store features): for each block's store, what its loop
// nest does (arithmetic, loop kinds and extents, vector and unroll extents,
// the parallel work split), how it touches memory (bytes, unit-stride or
// strided innermost accesses, reuse within tiles, the footprint of each
// loop level against the cache sizes); summed and maxed over the stores
// into a vector of fixed length.
//
//   std::vector<float> f = extractFeatures(scheduled, cpu);   // featureNames().size() values
//
// Layout: for each per-store feature X, "sum.X" and "max.X" over the
// stores (an init store included; counts and bytes as log2(1 + x) of the
// sum or max, flags and ratios as they are), then "func.flops" (log2),
// "func.blocks", "func.stores" and "func.loops". Caches the CpuInfo does
// not know count as 32 KiB, 1 MiB and 8 MiB.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "mlcc/target/target.h"

namespace mlcc::tune {

// The names of the features, in order (for --log and tests).
const std::vector<std::string>& featureNames();

// Throws nothing for any verified prim func; symbolic extents count as 1.
std::vector<float> extractFeatures(const ir::PrimFunc& f, const target::CpuInfo& cpu);

}  // namespace mlcc::tune
