// Conversion of ONNX tensors (initializers, Constant node values) to host
// tensors: ONNX data types to mlcc dtypes, the typed data fields and
// raw_data, and external data files (resolved against the model's directory).
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "importer.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/file_io.h"

namespace mlcc::frontend::onnx_import {

ir::DType dtypeFromOnnx(int onnx_type, const std::string& what) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return ir::DType::f32;
    case onnx::TensorProto::FLOAT16: return ir::DType::f16;
    case onnx::TensorProto::BFLOAT16: return ir::DType::bf16;
    case onnx::TensorProto::INT8: return ir::DType::i8;
    case onnx::TensorProto::INT32: return ir::DType::i32;
    case onnx::TensorProto::INT64: return ir::DType::i64;
    case onnx::TensorProto::BOOL: return ir::DType::boolean;
    case onnx::TensorProto::UINT8: return ir::DType::u8;
    case onnx::TensorProto::DOUBLE: return ir::DType::f64;
    case onnx::TensorProto::INT16: return ir::DType::i16;
    case onnx::TensorProto::UINT16: return ir::DType::u16;
    case onnx::TensorProto::UINT32: return ir::DType::u32;
    default: break;
  }
  std::string name =
      onnx::TensorProto::DataType_IsValid(onnx_type)
          ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type))
          : "unknown (" + std::to_string(onnx_type) + ")";
  throw Error(
      what + ": data type " + name +
      " is not supported (mlcc computes in f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, bool)");
}

std::vector<int64_t> intElements(const ir::Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case ir::DType::i64: out[i] = t.data<int64_t>()[i]; break;
      case ir::DType::i32: out[i] = t.data<int32_t>()[i]; break;
      case ir::DType::i8: out[i] = t.data<int8_t>()[i]; break;
      default: out[i] = static_cast<int64_t>(t.at(static_cast<int64_t>(i))); break;
    }
  }
  return out;
}

std::string computedSizeProblem(const std::vector<int64_t>& shape) {
  std::optional<int64_t> n = checkedElementCount(shape);
  if (!n) return ": " + shapeSizeError(shape);
  if (*n > kMaxComputedElements)
    return " would have " + std::to_string(*n) + " elements; the importer computes constants of at most " +
           std::to_string(kMaxComputedElements);
  // Loops over one dimension of an empty tensor cost as much as its elements.
  for (int64_t d : shape)
    if (d > kMaxComputedElements)
      return " would have a dimension of " + std::to_string(d) +
             "; the importer computes constants with dimensions of at most " +
             std::to_string(kMaxComputedElements);
  return "";
}

void checkComputedSize(const std::vector<int64_t>& shape, const std::string& what) {
  if (std::string problem = computedSizeProblem(shape); !problem.empty()) throw Error(what + problem);
}

ir::Tensor intTensor(const std::vector<int64_t>& values, bool scalar) {
  std::vector<int64_t> shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  ir::Tensor t = ir::Tensor::zeros(ir::DType::i64, shape);
  if (!values.empty()) std::memcpy(t.mutableBytes(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

namespace {

// An integer of an external_data entry ("offset", "length"): decimal digits only.
int64_t externalInt(const std::string& what, const std::string& key, const std::string& text) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw Error(what + ": external data " + key + " '" + text + "' is not a non-negative integer");
  return v;
}

// Reads the external data of a tensor of `dtype` and `shape` (`nbytes`
// bytes), allocating it only after checking the location, offset and length
// against the file's real size.
ir::Tensor readExternal(const onnx::TensorProto& t, const std::string& what, const std::string& base_dir,
                        ir::DType dtype, const std::vector<int64_t>& shape, int64_t nbytes) {
  std::string location;
  int64_t offset = 0, length = nbytes;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = externalInt(what, "offset", kv.value());
    else if (kv.key() == "length")
      length = externalInt(what, "length", kv.value());
  }
  if (location.empty()) throw Error(what + ": external data without a location");
  if (length != nbytes)
    throw Error(what + ": external data length is " + std::to_string(length) + " bytes, its type needs " +
                std::to_string(nbytes));
  std::string path = resolveInside(base_dir, location, what + ": external data location");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(what + ": cannot open external data file '" + path + "'");
  f.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(f.tellg());
  if (size < 0 ||
      !rangeWithin(static_cast<uint64_t>(offset), static_cast<uint64_t>(length), static_cast<uint64_t>(size)))
    throw Error(what + ": external data file '" + path + "' is too short (" + std::to_string(size) +
                " bytes; the tensor needs " + std::to_string(length) + " bytes at offset " +
                std::to_string(offset) + ")");
  ir::Tensor out = ir::Tensor::zeros(dtype, shape);
  if (nbytes == 0) return out;
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(out.mutableBytes()), nbytes);
  if (!f) throw Error(what + ": cannot read external data file '" + path + "'");
  out.canonicalizeBools();
  return out;
}

// The number of values in the typed data field that holds `dtype`.
int64_t typedFieldCount(const onnx::TensorProto& t, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::f32: return t.float_data_size();
    case ir::DType::i64: return t.int64_data_size();
    case ir::DType::f64: return t.double_data_size();
    case ir::DType::u32: return t.uint64_data_size();
    default: return t.int32_data_size();  // i32, and f16/bf16/i8/u8/i16/u16/bool widened to int32
  }
}

}  // namespace

// Every size is checked against the data actually present (raw_data length,
// typed field count, external file length) before the tensor is allocated,
// so a tiny file cannot make the importer allocate gigabytes.
ir::Tensor tensorFromOnnx(const onnx::TensorProto& t, const std::string& base_dir) {
  const std::string what = "tensor '" + t.name() + "'";
  ir::DType dtype = dtypeFromOnnx(t.data_type(), what);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  const int elem = ir::dtypeBytes(dtype);
  std::optional<int64_t> size = checkedByteSize(shape, elem);
  if (!size) throw Error(what + ": " + shapeSizeError(shape, elem));
  const int64_t nbytes = *size, n = nbytes / elem;

  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return readExternal(t, what, base_dir, dtype, shape, nbytes);
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<uint64_t>(nbytes))
      throw Error(what + ": raw data has " + std::to_string(t.raw_data().size()) + " bytes, its shape " +
                  "and data type need " + std::to_string(nbytes));
    return ir::Tensor::copyOf(dtype, shape, std::as_bytes(std::span(t.raw_data())));
  }
  if (int64_t have = typedFieldCount(t, dtype); have != n)
    throw Error(what + ": has " + std::to_string(have) + " elements, its shape needs " + std::to_string(n));
  ir::Tensor out = ir::Tensor::zeros(dtype, shape);
  std::byte* p = n ? out.mutableBytes() : nullptr;
  switch (dtype) {
    case ir::DType::f32:
      if (n) std::memcpy(p, t.float_data().data(), static_cast<size_t>(nbytes));
      break;
    case ir::DType::i64:
      if (n) std::memcpy(p, t.int64_data().data(), static_cast<size_t>(nbytes));
      break;
    case ir::DType::i32:
      if (n) std::memcpy(p, t.int32_data().data(), static_cast<size_t>(nbytes));
      break;
    case ir::DType::f64:
      if (n) std::memcpy(p, t.double_data().data(), static_cast<size_t>(nbytes));
      break;
    case ir::DType::f16:
    case ir::DType::bf16:  // bit patterns in int32_data
    case ir::DType::i16:
    case ir::DType::u16: {
      auto* d = reinterpret_cast<uint16_t*>(p);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    }
    case ir::DType::i8:
    case ir::DType::u8:
    case ir::DType::boolean: {
      auto* d = reinterpret_cast<uint8_t*>(p);
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        d[i] = static_cast<uint8_t>(dtype == ir::DType::boolean ? (v != 0) : v);
      }
      break;
    }
    case ir::DType::u32: {
      auto* d = reinterpret_cast<uint32_t*>(p);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<uint32_t>(t.uint64_data(static_cast<int>(i)));
      break;
    }
  }
  return out;
}

}  // namespace mlcc::frontend::onnx_import
