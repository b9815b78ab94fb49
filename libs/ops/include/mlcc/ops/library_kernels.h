// The library kernels that fusion dispatches to (call_extern "LIB.BASE..."):
// their names, their parameters by role, and the one check that a group of
// graph ops computes exactly what a kernel computes, binding the group's
// inputs to the kernel's parameters by role.
//
//   LIB.dense[_bias][_relu](x, w[, bias])    relu?(dense(x, w) + bias?)
//   LIB.matmul[_bias][_relu](a, b[, bias])   relu?(matmul(a, b) + bias?)
//
// with LIB `blas` (OpenBLAS on the CPU) or `cublas`. A dense group may also
// be written `matmul(x, permute_dims(w))` with w of rank 2 (TVM's tutorial):
// it binds as dense(x, w). Operands are bound by role, never by the order in
// which a pattern happens to use them, so `call_extern` always receives
// (x, w, bias) / (a, b, bias).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mlcc/ir/graph.h"

namespace mlcc::ops {

struct LibraryKernel {
  std::string symbol;               // "blas.dense_bias_relu"
  std::string library;              // "blas" or "cublas"
  std::string base;                 // "dense" or "matmul"
  bool bias = false;                // + bias (a vector along the last output dimension)
  bool relu = false;                // then relu
  std::vector<std::string> params;  // roles, in call order: x, w[, bias] or a, b[, bias]
  // What it computes, e.g. "relu(dense(x, w) + bias)".
  std::string semantics() const;
};

// The kernel named `symbol`, or nullopt for a name that is no library kernel.
std::optional<LibraryKernel> findLibraryKernel(std::string_view symbol);

// Every kernel symbol of `library` ("blas", "cublas"), comma-separated, for messages.
std::string libraryKernelList(std::string_view library);

// The result of binding a group to a kernel: its operands in the kernel's
// parameter order, or why the group is not that kernel.
struct KernelBinding {
  std::vector<ir::GraphVar> operands;  // one per kernel parameter (values the group reads)
  std::string mismatch;                // empty when bound
  // The mismatch is in the group's ops or their wiring (a pattern that can
  // never dispatch to this kernel), not in a shape or dtype.
  bool wrong_ops = false;
  explicit operator bool() const { return mismatch.empty(); }
};

// Binds the group `body` (op bindings in order, the last one the group's
// result; every other value it reads is an input) to kernel `k`. Checks the
// ops, their wiring and attributes (a permute_dims must transpose a rank-2
// weight), and the operands' types: f32, w of rank 2, and a bias of shape [N]
// or [1, ..., 1, N] for the output's last dimension N.
KernelBinding bindLibraryKernel(const LibraryKernel& k, std::span<const ir::Binding* const> body);

}  // namespace mlcc::ops
