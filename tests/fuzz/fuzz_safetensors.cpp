// Fuzz target: the safetensors reader (libs/support SafetensorsFile, and the
// ir::WeightStore over it that the tools use for weights files). open()
// promises to validate the whole header, so every accessor afterwards must
// be safe: the target reads every byte of every tensor and checks each
// tensor's size against its dtype and shape.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/ir/weights.h"
#include "mlcc/support/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = mlcc::fuzz::writeScratch("weights.safetensors", data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::SafetensorsFile f = mlcc::SafetensorsFile::open(path);
    for (const std::string& name : f.names()) {
      const mlcc::SafetensorsTensorInfo* info = f.find(name);
      if (!info) mlcc::fuzz::fail("a listed tensor is not found: " + name);
      uint64_t elems = 1;
      for (int64_t d : info->shape) {
        if (d < 0) mlcc::fuzz::fail("accepted a negative dim in " + name);
        elems *= static_cast<uint64_t>(d);
      }
      const auto elem_bytes = mlcc::safetensorsDTypeBytes(info->dtype);
      if (!elem_bytes || elems * static_cast<uint64_t>(*elem_bytes) != info->byteSize())
        mlcc::fuzz::fail("tensor " + name + ": size does not match its dtype and shape");
      std::span<const std::byte> bytes = f.data(*info);
      if (bytes.size() != info->byteSize())
        mlcc::fuzz::fail("tensor " + name + ": data() has the wrong size");
      unsigned sum = 0;
      for (std::byte b : bytes) sum += static_cast<unsigned>(b);  // every byte must be readable
      (void)sum;
    }
  });
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::ir::WeightStore store = mlcc::ir::WeightStore::open(std::vector<std::string>{path});
    for (const std::string& name : store.names()) {
      try {
        mlcc::ir::WeightView v = store.get(name);
        (void)v;
      } catch (const mlcc::Error&) {  // a dtype mlcc does not compute with
      }
    }
  });
  return 0;
}
