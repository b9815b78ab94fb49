// ONNX Resize's coordinate transformation: where output index `o` of an
// axis samples the input. resize2d's kernel and lowering use it, and so does
// the importer's antialiased Resize (its per-axis interpolation matrices).
#pragma once

#include <cstdint>
#include <string>

namespace mlcc::ops {

// The input coordinate of output index `o` along an axis of size `in`
// resized to `out`, for a coordinate_transformation_mode (half_pixel,
// pytorch_half_pixel, half_pixel_symmetric, align_corners, asymmetric);
// given_scale > 0: the scale the model gives (which maps coordinates back by
// itself), else out / in.
double resizeSourceCoord(int64_t o, int64_t in, int64_t out, const std::string& mode, float given_scale);

}  // namespace mlcc::ops
