// FuseTIR (fuse_tir.cpp): one prim func from a primitive graph sub-function.
#pragma once

#include <string>

#include "mlcc/ir/module.h"

namespace mlcc::transform {

struct PassContext;

// The group's name after its ops: "fused_conv2d_add_relu" (at most 80 characters).
std::string fusedName(const ir::GraphFunc& group);

// Legalizes each op of `group` and merges their bodies into one prim func
// named fusedName(group): params are the group's params then its outputs,
// each intermediate result a function-level alloc_buffer. Throws
// mlcc::Error naming the group and the binding for what it cannot lower, at
// that binding's source location when `ctx` knows it (PassContext::errorAt).
ir::PrimFunc fuseTir(const ir::GraphFunc& group, const PassContext& ctx);

}  // namespace mlcc::transform
