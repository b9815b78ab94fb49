// Races between the thread blocks of one GPU kernel: thread blocks run in
// no set order and no barrier orders them, so an element of a global buffer
// that one thread block writes must not be read by another (a producer and
// its consumer in one kernel, each thread block reading what others
// compute), nor written by another (which value stays would be chance).
// Part of verifyGpuFunc (gpu_check.h).
#pragma once

#include <optional>
#include <string>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

// Why a load or store of a global buffer in the kernel rooted at `kernel`
// may touch an element that another thread block of it stores, or nullopt
// when every such pair is shown apart (gpu_block_races.cpp says how).
std::optional<std::string> threadBlockRace(const ir::Stmt& kernel);

}  // namespace mlcc::schedule
