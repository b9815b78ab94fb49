// FuseTIR (fuse_tir.cpp): one prim func from a primitive graph sub-function.
#pragma once

#include <string>

#include "mlcc/ir/module.h"

namespace mlcc::transform {

struct PassContext;

// The group's name after its ops and called prim funcs: "fused_conv2d_add_relu"
// (at most 80 characters).
std::string fusedName(const ir::GraphFunc& group);

// Legalizes each op of `group` (a call_tir member brings the prim func of
// `m` it calls, unscheduled) and merges their bodies into one prim func
// named fusedName(group): params are the group's params then its outputs,
// each intermediate result a function-level alloc_buffer. Throws
// mlcc::Error naming the group and the binding for what it cannot lower, at
// that binding's source location when `ctx` knows it (PassContext::errorAt).
ir::PrimFunc fuseTir(const ir::GraphFunc& group, const ir::Module& m, const PassContext& ctx);

}  // namespace mlcc::transform
