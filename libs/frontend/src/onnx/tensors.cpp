// Conversion of ONNX tensors (initializers, Constant node values) to host
// tensors: ONNX data types to mlcc dtypes, the typed data fields and
// raw_data, and external data files (resolved against the model's directory).
#include <cstring>
#include <filesystem>
#include <fstream>

#include "importer.h"
#include "mlcc/ir/float_bits.h"
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
    default: break;
  }
  std::string name =
      onnx::TensorProto::DataType_IsValid(onnx_type)
          ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type))
          : "unknown (" + std::to_string(onnx_type) + ")";
  throw Error(what + ": data type " + name +
              " is not supported (mlcc computes in f32, f16, bf16, i8, i32, i64, bool)");
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

ir::Tensor intTensor(const std::vector<int64_t>& values, bool scalar) {
  std::vector<int64_t> shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  ir::Tensor t = ir::Tensor::zeros(ir::DType::i64, shape);
  if (!values.empty()) std::memcpy(t.mutableBytes(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

namespace {

std::string readExternal(const onnx::TensorProto& t, const std::string& base_dir, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  if (location.empty()) throw Error("tensor '" + t.name() + "': external data without a location");
  std::string path = resolveInside(base_dir, location, "tensor '" + t.name() + "': external data location");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("tensor '" + t.name() + "': cannot open external data file '" + path + "'");
  f.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(f.tellg());
  if (length < 0) length = static_cast<int64_t>(nbytes);
  if (offset < 0 || offset + length > size)
    throw Error("tensor '" + t.name() + "': external data file '" + path + "' is too short (" +
                std::to_string(size) + " bytes, needs " + std::to_string(offset + length) + ")");
  std::string data(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  if (!f) throw Error("tensor '" + t.name() + "': cannot read external data file '" + path + "'");
  return data;
}

}  // namespace

ir::Tensor tensorFromOnnx(const onnx::TensorProto& t, const std::string& base_dir) {
  const std::string what = "tensor '" + t.name() + "'";
  ir::DType dtype = dtypeFromOnnx(t.data_type(), what);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(what + ": negative dimension");
  ir::Tensor out = ir::Tensor::zeros(dtype, shape);
  const size_t n = static_cast<size_t>(out.numel());
  const size_t nbytes = out.nbytes();
  auto checkCount = [&](size_t have) {
    if (have != n)
      throw Error(what + ": has " + std::to_string(have) + " elements, its shape needs " + std::to_string(n));
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string raw = readExternal(t, base_dir, nbytes);
    if (raw.size() != nbytes)
      throw Error(what + ": external data has " + std::to_string(raw.size()) + " bytes, needs " +
                  std::to_string(nbytes));
    if (nbytes) std::memcpy(out.mutableBytes(), raw.data(), nbytes);
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      throw Error(what + ": raw data has " + std::to_string(t.raw_data().size()) + " bytes, needs " +
                  std::to_string(nbytes));
    if (nbytes) std::memcpy(out.mutableBytes(), t.raw_data().data(), nbytes);
    return out;
  }
  std::byte* p = n ? out.mutableBytes() : nullptr;
  switch (dtype) {
    case ir::DType::f32:
      checkCount(static_cast<size_t>(t.float_data_size()));
      if (n) std::memcpy(p, t.float_data().data(), nbytes);
      break;
    case ir::DType::i64:
      checkCount(static_cast<size_t>(t.int64_data_size()));
      if (n) std::memcpy(p, t.int64_data().data(), nbytes);
      break;
    case ir::DType::i32:
      checkCount(static_cast<size_t>(t.int32_data_size()));
      if (n) std::memcpy(p, t.int32_data().data(), nbytes);
      break;
    case ir::DType::f16:
    case ir::DType::bf16: {  // bit patterns in int32_data
      checkCount(static_cast<size_t>(t.int32_data_size()));
      auto* d = reinterpret_cast<uint16_t*>(p);
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    }
    case ir::DType::i8:
    case ir::DType::boolean: {
      checkCount(static_cast<size_t>(t.int32_data_size()));
      auto* d = reinterpret_cast<int8_t*>(p);
      for (size_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        d[i] = static_cast<int8_t>(dtype == ir::DType::boolean ? (v != 0) : v);
      }
      break;
    }
  }
  return out;
}

}  // namespace mlcc::frontend::onnx_import
