// WeightStore: a module's safetensors files as one name -> tensor map, and
// the check of weight constants against it (see weights.h).
#include "mlcc/ir/weights.h"

#include <array>
#include <utility>

#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::ir {

namespace {

constexpr std::array<std::pair<DType, std::string_view>, 12> kSafetensorsNames = {{{DType::f32, "F32"},
                                                                                   {DType::f16, "F16"},
                                                                                   {DType::bf16, "BF16"},
                                                                                   {DType::i8, "I8"},
                                                                                   {DType::i32, "I32"},
                                                                                   {DType::i64, "I64"},
                                                                                   {DType::boolean, "BOOL"},
                                                                                   {DType::u8, "U8"},
                                                                                   {DType::f64, "F64"},
                                                                                   {DType::i16, "I16"},
                                                                                   {DType::u16, "U16"},
                                                                                   {DType::u32, "U32"}}};

std::string formatShape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string formatTensorType(DType t, const std::vector<int64_t>& shape) {
  return std::string(dtypeName(t)) + formatShape(shape);
}

// Checks one `const "weight"` binding of graph function `func`.
void checkWeightBinding(const std::string& func, const Binding& b, const WeightStore& store) {
  std::string where = "@" + func + ": %" + b.var->name + ": ";
  const Type& type = b.var->type;
  if (!type.isTensor()) throw Error(where + "weight '" + b.value.weight + "' is bound to a tuple type");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < type.shape.size(); ++i) {
    int64_t d;
    if (!asConstInt(type.shape[i], &d))
      throw Error(where + "weight '" + b.value.weight + "' has a symbolic dimension " + std::to_string(i) +
                  " in its type; weight shapes must be constant");
    dims.push_back(d);
  }
  WeightView w;
  try {
    w = store.get(b.value.weight);
  } catch (const Error& e) {
    throw Error(where + e.message());
  }
  if (w.dtype != type.dtype || w.shape != dims)
    throw Error(where + "weight '" + b.value.weight + "' is " + formatTensorType(w.dtype, w.shape) + " in " +
                std::string(w.file) + ", but the binding's type is " + formatTensorType(type.dtype, dims));
}

}  // namespace

std::optional<DType> dtypeFromSafetensors(std::string_view st_dtype) {
  for (const auto& [t, name] : kSafetensorsNames)
    if (name == st_dtype) return t;
  return std::nullopt;
}

std::string_view safetensorsName(DType t) {
  for (const auto& [dt, name] : kSafetensorsNames)
    if (dt == t) return name;
  return "?";
}

WeightStore WeightStore::open(const Module& module) {
  std::vector<std::string> paths;
  for (const std::string& f : module.weight_files) paths.push_back(resolvePath(module.base_dir, f));
  return open(paths);
}

WeightStore WeightStore::open(const std::vector<std::string>& paths) {
  WeightStore store;
  for (const std::string& path : paths) {
    store.files_.push_back(SafetensorsFile::open(path));
    size_t index = store.files_.size() - 1;
    for (const std::string& name : store.files_.back().names()) {
      auto [it, inserted] = store.index_.emplace(name, index);
      if (!inserted)
        throw Error("weight '" + name + "' is in both " + store.files_[it->second].path() + " and " + path +
                    "; weight names must be unique across a module's weights files");
    }
  }
  return store;
}

std::string WeightStore::fileList() const {
  if (files_.empty()) return "the module's weights files (it names none)";
  std::string s;
  for (size_t i = 0; i < files_.size(); ++i) s += (i ? ", " : "") + files_[i].path();
  return s;
}

WeightView WeightStore::get(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("weight '" + std::string(name) + "' not found in " + fileList());
  const SafetensorsFile& file = files_[it->second];
  const SafetensorsTensorInfo& info = *file.find(name);
  std::optional<DType> dtype = dtypeFromSafetensors(info.dtype);
  if (!dtype)
    throw Error("weight '" + std::string(name) + "' in " + file.path() + " has dtype " + info.dtype +
                ", which mlcc does not support (supported: F32, F16, BF16, I8, I32, I64, BOOL)");
  return WeightView{*dtype, info.shape, file.data(info), file.path()};
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [name, index] : index_) out.push_back(name);
  return out;
}

void checkModuleWeights(const Module& module, const WeightStore& store) {
  for (const Function& f : module.functions) {
    const auto* graph = std::get_if<GraphFunc>(&f);
    if (!graph) continue;
    for (const BindingBlock& block : graph->blocks)
      for (const Binding& b : block.bindings)
        if (b.value.kind == ValueKind::Const && !b.value.is_inline) checkWeightBinding(graph->name, b, store);
  }
}

}  // namespace mlcc::ir
