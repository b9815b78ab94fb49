// The message of an out-of-bounds access caught by a bounds-checked kernel
// (mlcc-codegen --bounds-check): shared by the runtime's and the JIT's
// mlcc_rt_bounds_error, so both report it alike.
//   prim func @f, block "b": store to %y[3, 12] is out of bounds of shape [4, 10]
#pragma once

#include <cstdint>
#include <string>

namespace mlcc::rt {

inline std::string boundsErrorMessage(const char* access, int32_t rank, const int64_t* index,
                                      const int64_t* shape) {
  auto list = [&](const int64_t* v) {
    std::string s;
    for (int32_t d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(v[d]);
    return s;
  };
  return std::string(access ? access : "an access") + "[" + list(index) + "] is out of bounds of shape [" +
         list(shape) + "]";
}

}  // namespace mlcc::rt
