// Races in one GPU kernel. Thread blocks run in no set order and no
// barrier orders them, so an element of a global buffer that one thread
// block writes must not be read by another (a producer and its consumer in
// one kernel, each thread block reading what others compute), nor written
// by another (which value stays would be chance); and the threads of a
// thread block run in no set order between barriers, so no two of them may
// store to one element. Part of verifyGpuFunc (gpu_check.h).
#pragma once

#include <optional>
#include <string>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

// Why a load or store of a global buffer in the kernel rooted at `kernel`
// may touch an element that another thread block of it stores, or nullopt
// when every such pair is shown apart (gpu_races.cpp says how).
std::optional<std::string> threadBlockRace(const ir::Stmt& kernel);

// Why two threads of one thread block of the kernel rooted at `kernel` may
// store to one element of a global or shared buffer (nothing orders the
// threads between barriers, so which value stays would be chance), or
// nullopt when every store is shown to give each thread its own elements
// (gpu_races.cpp says how). A reduction's updates are the reduction
// checks' (gpu_check.h).
std::optional<std::string> threadStoreRace(const ir::Stmt& kernel);

}  // namespace mlcc::schedule
