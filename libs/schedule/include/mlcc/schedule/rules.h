// Default schedule rules per target (like TVM's DLight for GPUs and the
// MetaSchedule default space for CPUs): each unscheduled prim func of a
// module is scheduled by the first rule of the target that applies to it.
//
//   Target t = Target::parse("llvm -num-cores=2");
//   auto report = applyDefaultRules(module, t);   // report[i]: {func, rule}
//
// Rules only use Schedule primitives, so every scheduled function carries
// its trace and keeps its meaning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::schedule {

struct Target {
  enum class Kind { llvm, cuda };
  Kind kind = Kind::llvm;
  // llvm: -mcpu= (default: the host CPU), its vector width in bits, and
  // -num-cores= (default: the host's).
  std::string mcpu;
  int vector_bits = 512;
  int num_cores = 1;
  // cuda: -arch=sm_XX (default sm_80) and the limits the rules respect.
  std::string arch = "sm_80";
  int max_threads_per_block = 1024;
  int64_t max_shared_memory_bytes = 48 * 1024;

  // "llvm", "llvm -mcpu=skylake-avx512 -num-cores=4", "cuda -arch=sm_90".
  // Throws mlcc::Error naming the bad part.
  static Target parse(const std::string& text);
  std::string str() const;
};

struct RuleReport {
  std::string func;  // the prim func
  std::string rule;  // the rule that scheduled it ("none": left as is)
};

// Schedules every prim func of `m` whose trace is empty with the target's
// default rules; functions that already have a trace are left alone
// (reported with rule "already scheduled"). `seed` drives any sampling.
std::vector<RuleReport> applyDefaultRules(ir::Module& m, const Target& target, uint64_t seed = 0);

// The rules of a target, in the order they are tried.
std::vector<std::string> ruleNames(Target::Kind kind);

}  // namespace mlcc::schedule
