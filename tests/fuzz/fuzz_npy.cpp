// Fuzz target: the .npy reader (libs/support parseNpy, and
// ir::readNpyTensor, which mlcc-run uses for --input files). An accepted
// array must have as many data bytes as its dtype and shape say, and must
// round-trip: serializeNpy(parseNpy(x)) parses back to the same array.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_common.h"
#include "mlcc/ir/tensor_npy.h"
#include "mlcc/support/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::NpyArray a = mlcc::parseNpy(bytes, "fuzz.npy");
    const auto elem = mlcc::npyDTypeBytes(a.dtype);
    if (!elem) mlcc::fuzz::fail("accepted an unsupported dtype '" + a.dtype + "'");
    if (a.data.size() != static_cast<size_t>(a.numElements()) * static_cast<size_t>(*elem))
      mlcc::fuzz::fail("data size does not match dtype and shape");
    const std::string again = mlcc::serializeNpy(a);
    mlcc::NpyArray b = mlcc::parseNpy(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(again.data()), again.size()),
        "again.npy");
    if (b.dtype != a.dtype || b.shape != a.shape || b.data != a.data)
      mlcc::fuzz::fail("serializeNpy(parseNpy(x)) does not parse back to the same array");
  });
  mlcc::fuzz::expectErrorsOnly([&] {
    const std::string path = mlcc::fuzz::writeScratch("input.npy", data, size);
    (void)mlcc::ir::readNpyTensor(path, "input 'x'");
  });
  return 0;
}
