// Helpers shared by the converter families.
#pragma once

#include "importer.h"

namespace mlcc::frontend::onnx_import {

// The shortest decimal double that reads back to `f` (for float attributes).
double floatAttr(float f);
// `v` cast to `t` (itself when it has that dtype already).
ValuePtr castTo(NodeCtx& c, const ValuePtr& v, ir::DType t, const std::string& name);
// Reshape `v` to `shape` (itself when the shape is already that).
ValuePtr reshapeTo(NodeCtx& c, const ValuePtr& v, const std::vector<ir::PrimExpr>& shape,
                   const std::string& name);
// The value of dimension `d`; fails naming `what` when it is symbolic.
int64_t staticDim(NodeCtx& c, const ir::PrimExpr& d, const std::string& what);
// The product of dimensions [b, e) of a shape.
ir::PrimExpr dimProduct(const std::vector<ir::PrimExpr>& shape, size_t b, size_t e);
// A tensor of `shape` holding `value` everywhere: a scalar broadcast (no
// allocation of a crafted size).
ValuePtr filled(NodeCtx& c, ir::DType dtype, double value, const std::vector<ir::PrimExpr>& shape,
                const std::string& name);
// ONNX Conv/ConvTranspose of x and w with the node's attributes (kernel_shape,
// strides, pads, auto_pad, dilations, group; output_padding/output_shape),
// plus the per-channel bias of input `bias_input` when present (convert_nn.cpp).
// A 3-D transposed convolution (ONNX ConvTranspose's window: kernel,
// strides, dilations, pads [d0, h0, w0, d1, h1, w1], output_padding) of x
// [N, C, D, H, W] and w [C, O/groups, KD, KH, KW] (convert_nn.cpp).
struct ConvTransposeWindow {
  std::vector<int64_t> kernel, strides, dil, pads, out_pad;
};
ValuePtr convTranspose3d(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, const ConvTransposeWindow& win,
                         int64_t groups, const std::string& name);
ValuePtr convolution(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, bool transpose, size_t bias_input,
                     const std::string& name);
// `axis` in [-rank, rank) as a non-negative axis; fails when out of range
// (convert_compose.cpp).
int64_t normalizedAxis(NodeCtx& c, int64_t axis, int64_t rank);
// x[begin:end] along `axis` (convert_shape.cpp).
ValuePtr slice(NodeCtx& c, const ValuePtr& x, int64_t axis, int64_t begin, int64_t end, const std::string& n);
// Item `i` of `axis`, the axis removed.
ValuePtr item(NodeCtx& c, const ValuePtr& x, int64_t axis, int64_t i, const std::string& n);
// The values (of one shape) stacked along a new axis `axis`.
ValuePtr stack(NodeCtx& c, const std::vector<ValuePtr>& parts, int64_t axis, const std::string& n);
// The dims attribute value of a shape.
ir::AttrValue dimsAttr(const std::vector<ir::PrimExpr>& shape);

}  // namespace mlcc::frontend::onnx_import
