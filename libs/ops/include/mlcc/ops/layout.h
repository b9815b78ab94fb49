// Tensor layouts as strings, as TVM's layout_transform writes them: each
// character is an axis, upper case a primal axis ("NCHW"), lower case with
// a factor in front a block of the primal axis of the same letter
// ("NCHW16c": C split into C/16 outer and 16 inner; "OIHW16i16o" for
// convolution weights). A primal axis is split at most once. Used by the
// `layout_transform` and `conv2d_nchwc` ops and the convert-layout pass.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mlcc/ir/tensor.h"
#include "mlcc/ops/shape.h"

namespace mlcc::ops {

class Layout {
 public:
  struct Axis {
    char name;           // 'A'..'Z' primal, 'a'..'z' a block of the primal axis toupper(name)
    int64_t factor = 0;  // the block's size (0 for a primal axis)
  };

  // Throws mlcc::Error naming `text` when it is no layout.
  static Layout parse(std::string_view text);

  const std::vector<Axis>& axes() const { return axes_; }
  size_t rank() const { return axes_.size(); }
  std::string str() const;
  // The primal axes in order ("NCHW" for "NCHW16c").
  std::string primal() const;
  // The position of the axis named `name`, or -1.
  int position(char name) const;
  // The block factor of primal axis `primal` (0: not split).
  int64_t factorOf(char primal) const;

 private:
  std::vector<Axis> axes_;
};

// The blocked channel layout "NCHW{block}c".
std::string nchwcLayout(int64_t block);

// The shape of a tensor in layout `to` that has `shape` in layout `from`.
// Both layouts must have the same primal axes, and for each one `from` and
// `to` split it by the same factor or one of them does not split it; a
// split needs a constant dimension that the factor divides. Throws
// mlcc::Error ("op 'layout_transform': ...") otherwise.
Shape transformedShape(const Layout& from, const Layout& to, const Shape& shape);

// `t` (in layout `from`) moved to layout `to`: layout_transform's kernel.
ir::Tensor relayout(const ir::Tensor& t, const std::string& from, const std::string& to);

}  // namespace mlcc::ops
