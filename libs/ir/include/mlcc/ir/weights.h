// The weights of a module: its safetensors files, opened (mmap'ed) together,
// with tensors looked up by name as mlcc dtypes. And a check that a module's
// weight constants match the tensors they name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mlcc/ir/dtype.h"
#include "mlcc/ir/module.h"
#include "mlcc/support/safetensors.h"

namespace mlcc::ir {

// The mlcc dtype of a safetensors dtype string ("F32" -> f32, "BOOL" ->
// bool, ...), or nullopt for a dtype mlcc does not compute with ("U8", "F64").
std::optional<DType> dtypeFromSafetensors(std::string_view st_dtype);
// The safetensors spelling of an mlcc dtype.
std::string_view safetensorsName(DType t);

// A tensor of a weights file. `data` points into the file's mapping and
// lives as long as the WeightStore; it may be unaligned (see safetensors.h).
struct WeightView {
  DType dtype;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
  std::string_view file;  // the path it was read from
};

class WeightStore {
 public:
  // Opens the module's weight_files, resolved against module.base_dir.
  static WeightStore open(const Module& module);
  // Opens the given files (paths used as given).
  static WeightStore open(const std::vector<std::string>& paths);

  // Throws mlcc::Error when the name is in no file ("weight 'fc1.weight' not
  // found in model.safetensors"), or its dtype is not an mlcc dtype.
  WeightView get(std::string_view name) const;
  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }
  // All tensor names, sorted.
  std::vector<std::string> names() const;
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  std::string fileList() const;

  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t, std::less<>> index_;  // tensor name -> index in files_
};

// Checks every weights constant (`const "name"`) of every graph function:
// the tensor exists and its dtype and shape equal the binding's type, whose
// dims must then be constants. Throws mlcc::Error naming the function, the
// variable and the weight.
void checkModuleWeights(const Module& module, const WeightStore& store);

}  // namespace mlcc::ir
