// The executable form of a prim func: a tree of closures (virtual nodes).
// Integer and bool expressions evaluate to int64_t (wrapped to their dtype),
// floating expressions to double: f32, f16 and bf16 values are computed in
// float (f16/bf16 rounded to their format after each operation), f64 values
// in double. Variables live in a flat i64 slot array, buffers in a table of
// base pointer + shape + strides filled at call time. Internal to libs/interp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "mlcc/ir/dtype.h"
#include "mlcc/ir/dtype_storage.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::interp::tir {

struct BufRt {
  std::byte* base = nullptr;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
};

// The state of one call.
struct Frame {
  int64_t* slots;
  BufRt* bufs;
};

// Static facts about a buffer, for error messages and allocation.
struct BufInfo {
  std::string name;
  ir::DType dtype;
  int ndim;
};

struct IExpr {
  virtual ~IExpr() = default;
  virtual int64_t eval(Frame& f) const = 0;
};
struct FExpr {
  virtual ~FExpr() = default;
  virtual double eval(Frame& f) const = 0;
};
struct SNode {
  virtual ~SNode() = default;
  virtual void exec(Frame& f) const = 0;
};
using IPtr = std::unique_ptr<IExpr>;
using FPtr = std::unique_ptr<FExpr>;
using SPtr = std::unique_ptr<SNode>;

// Wraps an i64 to the range of integer dtype `t` (two's complement), or to
// 0/1 for bool.
inline int64_t wrapInt(int64_t v, ir::DType t) {
  const uint64_t u = static_cast<uint64_t>(v);
  switch (t) {
    case ir::DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(u));
    case ir::DType::i16: return static_cast<int16_t>(static_cast<uint16_t>(u));
    case ir::DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(u));
    case ir::DType::u32: return static_cast<uint32_t>(u);
    case ir::DType::u16: return static_cast<uint16_t>(u);
    case ir::DType::u8: return static_cast<uint8_t>(u);
    case ir::DType::boolean: return v != 0;
    default: return v;
  }
}

// Calls f(T{}) with the C++ element type T of integer or bool dtype `t`;
// throws for a float dtype (`what` names the access).
template <class F>
auto withIntStorage(ir::DType t, const char* what, F&& f) {
  if (!ir::isInt(t) && t != ir::DType::boolean)
    throw Error(std::string("integer ") + what + " of a float buffer");
  return ir::withStorageType(t, std::forward<F>(f));
}

// The float element of dtype T at `p`, and its store (f16/bf16 rounded to
// nearest even, f32 rounded from a double, f64 as it is).
template <ir::DType T>
double loadFloat(const std::byte* p) {
  if constexpr (T == ir::DType::f32 || T == ir::DType::f64) {
    std::conditional_t<T == ir::DType::f32, float, double> v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    if constexpr (T == ir::DType::f16) return ir::detail::halfBitsToDouble(bits);
    return ir::detail::bf16BitsToDouble(bits);
  }
}
template <ir::DType T>
void storeFloat(std::byte* p, double v) {
  if constexpr (T == ir::DType::f32 || T == ir::DType::f64) {
    const std::conditional_t<T == ir::DType::f32, float, double> x = v;
    std::memcpy(p, &x, sizeof x);
  } else {
    const uint16_t bits =
        T == ir::DType::f16 ? ir::detail::doubleToHalfBits(v) : ir::detail::doubleToBF16Bits(v);
    std::memcpy(p, &bits, 2);
  }
}

// An affine i64 index expression c + sum(coef * slot), evaluated without
// virtual calls (the common case of loop and iteration variable indices).
struct Affine {
  int64_t c = 0;
  std::vector<std::pair<int, int64_t>> terms;  // (slot, coefficient)
  int64_t eval(const int64_t* slots) const {
    uint64_t v = static_cast<uint64_t>(c);
    for (const auto& [s, k] : terms) v += static_cast<uint64_t>(slots[s]) * static_cast<uint64_t>(k);
    return static_cast<int64_t>(v);
  }
};

// The indices of one buffer access, turned into a bounds-checked element
// offset: affine indices take the fast path, others are general closures.
struct Index {
  int buf = 0;
  const std::vector<BufInfo>* infos = nullptr;
  bool affine = false;
  std::vector<Affine> aff;
  std::vector<IPtr> exprs;

  size_t size() const { return affine ? aff.size() : exprs.size(); }
  int64_t at(Frame& f, size_t d) const { return affine ? aff[d].eval(f.slots) : exprs[d]->eval(f); }
  [[noreturn]] void fail(Frame& f) const;
  int64_t offset(Frame& f) const {
    const BufRt& b = f.bufs[buf];
    int64_t off = 0;
    if (affine) {
      for (size_t d = 0; d < aff.size(); ++d) {
        int64_t i = aff[d].eval(f.slots);
        if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(b.shape[d])) fail(f);
        off += i * b.strides[d];
      }
      return off;
    }
    for (size_t d = 0; d < exprs.size(); ++d) {
      int64_t i = exprs[d]->eval(f);
      if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(b.shape[d])) fail(f);
      off += i * b.strides[d];
    }
    return off;
  }
};

}  // namespace mlcc::interp::tir
