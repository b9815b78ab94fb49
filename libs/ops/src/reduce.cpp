// Reductions (artifacts_schema/ops.md): sum, mean, max, min, prod over any
// set of axes, and argmax/argmin over one axis. Float dtypes accumulate in
// double (f16/bf16 are staged through f32); integers accumulate in i64 with
// wrap-around and are stored back to their dtype.
#include <cmath>
#include <limits>
#include <type_traits>

#include "elementwise_util.h"
#include "legalize_util_ew.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

using ew::DClass, ir::DType, ir::Tensor, ir::Type;

enum class RedKind : uint8_t { Sum, Mean, Max, Min, Prod };

// Input dims coalesced into runs of reduced / kept dims, with the element
// strides of the input and of the output (0 along reduced runs).
struct ReducePlan {
  std::vector<int64_t> shape, in_strides, out_strides;
  std::vector<bool> red;
  int64_t in_numel = 1, out_numel = 1, count = 1;  // count: elements reduced into each output

  ReducePlan(const std::vector<int64_t>& s, const std::vector<bool>& reduced) {
    elementCount(s);  // checked: the partial products below then fit
    for (size_t i = 0; i < s.size(); ++i) {
      in_numel *= s[i];
      (reduced[i] ? count : out_numel) *= s[i];
      if (s[i] == 1) continue;
      if (!shape.empty() && red.back() == reduced[i]) {
        shape.back() *= s[i];
      } else {
        shape.push_back(s[i]);
        red.push_back(reduced[i]);
      }
    }
    if (shape.empty()) {
      shape.push_back(1);
      red.push_back(false);
    }
    size_t r = shape.size();
    in_strides.assign(r, 0);
    out_strides.assign(r, 0);
    int64_t is = 1, os = 1;
    for (size_t d = r; d-- > 0;) {
      in_strides[d] = is;
      is *= shape[d];
      if (!red[d]) {
        out_strides[d] = os;
        os *= shape[d];
      }
    }
  }

  // Walks the input row by row (innermost run): row(x_offset, acc_offset, n, inner_reduced).
  template <class Row>
  void run(Row&& row) const {
    if (in_numel == 0) return;
    size_t r = shape.size();
    int64_t n = shape[r - 1];
    bool inner_red = red[r - 1];
    std::vector<int64_t> idx(r, 0);
    int64_t o = 0;
    for (int64_t x = 0; x < in_numel; x += n) {
      row(x, o, n, inner_red);
      for (size_t d = r - 1; d-- > 0;) {
        o += out_strides[d];
        if (++idx[d] < shape[d]) break;
        o -= out_strides[d] * shape[d];
        idx[d] = 0;
      }
    }
  }
};

template <class A>
A combine(RedKind k, A a, A b) {
  switch (k) {
    case RedKind::Sum:
    case RedKind::Mean:
      if constexpr (std::is_floating_point_v<A>)
        return a + b;
      else
        return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case RedKind::Prod:
      if constexpr (std::is_floating_point_v<A>)
        return a * b;
      else
        return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case RedKind::Max:
      if constexpr (std::is_floating_point_v<A>)
        if (a != a || b != b) return a != a ? a : b;
      return a < b ? b : a;
    case RedKind::Min:
      if constexpr (std::is_floating_point_v<A>)
        if (a != a || b != b) return a != a ? a : b;
      return b < a ? b : a;
  }
  return a;
}

template <class T, class A, RedKind K>
void reduceRows(const T* x, A* acc, const ReducePlan& plan) {
  plan.run([&](int64_t xo, int64_t ao, int64_t n, bool inner_red) {
    const T* px = x + xo;
    if (inner_red) {
      A a = acc[ao];
      for (int64_t i = 0; i < n; ++i) a = combine<A>(K, a, static_cast<A>(px[i]));
      acc[ao] = a;
    } else {
      A* pa = acc + ao;
      for (int64_t i = 0; i < n; ++i) pa[i] = combine<A>(K, pa[i], static_cast<A>(px[i]));
    }
  });
}

template <class T, class A>
void reduceTyped(RedKind k, const T* x, A* acc, const ReducePlan& plan) {
  switch (k) {
    case RedKind::Sum:
    case RedKind::Mean: reduceRows<T, A, RedKind::Sum>(x, acc, plan); break;
    case RedKind::Prod: reduceRows<T, A, RedKind::Prod>(x, acc, plan); break;
    case RedKind::Max: reduceRows<T, A, RedKind::Max>(x, acc, plan); break;
    case RedKind::Min: reduceRows<T, A, RedKind::Min>(x, acc, plan); break;
  }
}

template <class A>
A identity(RedKind k) {
  switch (k) {
    case RedKind::Sum:
    case RedKind::Mean: return A(0);
    case RedKind::Prod: return A(1);
    case RedKind::Max:
      return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::lowest();
    case RedKind::Min:
      return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  return A(0);
}

std::vector<int64_t> reducedShape(const std::vector<int64_t>& s, const std::vector<bool>& red, bool keep) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!red[i])
      out.push_back(s[i]);
    else if (keep)
      out.push_back(1);
  return out;
}

Tensor reduceCompute(RedKind k, const Tensor& in, const ir::Attrs& attrs, const std::string& op) {
  std::vector<bool> red = ew::reducedAxes(attrs, in.rank(), op);
  ReducePlan plan(in.shape(), red);
  std::vector<int64_t> out_shape = reducedShape(in.shape(), red, attrBool(attrs, "keepdims"));
  DType t = in.dtype();
  // f16/bf16 staged in f32. Float sums accumulate in double, integer sums in
  // i64 (wrapped to the dtype by the final cast); integer means truncate.
  const bool half = t == DType::f16 || t == DType::bf16;
  const Tensor x = half ? ew::toF32(in) : in;
  Tensor out = Tensor::zeros(x.dtype(), out_shape);
  ew::dispatchStorage(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    T* o = out.mutableData<T>();
    if (k == RedKind::Max || k == RedKind::Min) {
      std::fill(o, o + plan.out_numel, identity<T>(k));
      reduceTyped<T, T>(k, x.data<T>(), o, plan);
      return;
    }
    std::vector<Acc> acc(static_cast<size_t>(plan.out_numel), identity<Acc>(k));
    reduceTyped<T, Acc>(k, x.data<T>(), acc.data(), plan);
    for (int64_t i = 0; i < plan.out_numel; ++i) {
      Acc v = acc[i];
      if (k == RedKind::Mean) {
        if constexpr (std::is_floating_point_v<T>)
          v /= static_cast<double>(plan.count);
        else
          v = plan.count ? v / plan.count : 0;  // truncates toward zero
      }
      o[i] = static_cast<T>(v);
    }
  });
  return half ? ew::fromF32(out, t) : out;
}

// ---------------------------------------------------------------------------
// Legalization. Float sums/products/means accumulate in f32 (the kernel:
// double), so results agree to f32 rounding, f64 ones in f64; f16/bf16 are staged through
// f32 as in the kernel. Integer sums and products wrap in their own dtype
// (the same residue as the kernel's i64 accumulation); integer means sum in
// i64 and truncate toward zero. Float max/min propagate NaN (the kernel's
// combine) though TIR's max/min ignore it: a second stage flags reductions
// that saw a NaN.

using ir::PrimExpr;
using namespace ir::build;

ir::PrimFunc legalizeReduce(const std::string& name, RedKind k, const Type& x_type, const Type& out,
                            const ir::Attrs& a) {
  namespace te = ir::te;
  te::FuncBuilder fb(name);
  ir::Buffer x = fb.input("x", x_type);
  std::vector<bool> red = ew::reducedAxes(a, static_cast<int64_t>(x_type.rank()), name);
  lew::AxesReduce plan = lew::planAxesReduce(x_type.shape, red, attrBool(a, "keepdims"));
  DType t = x_type.dtype;
  auto xAt = [&](const te::Indices& i, const te::Indices& r) { return load(x, plan.inputIndices(i, r)); };
  auto same = [&](const te::Indices& i) { return std::vector<PrimExpr>(i.begin(), i.end()); };

  if (k == RedKind::Max || k == RedKind::Min) {
    te::ReduceOp op = k == RedKind::Max ? te::ReduceOp::Max : te::ReduceOp::Min;
    if (!ir::isFloat(t)) return fb.build({fb.reduce(name, plan.out_shape, t, plan.extents, op, xAt)});
    ir::Buffer nan = lew::anyNaN(fb, name + "_isnan", plan,
                                 [&](const std::vector<PrimExpr>& idx) { return load(x, idx); });
    ir::Buffer acc = fb.reduce(name + "_acc", plan.out_shape, t, plan.extents, op, xAt);
    ir::Buffer y = fb.compute(name, out.shape, t, [&](const te::Indices& i) {
      return ir::makeSelect(lew::gt(load(nan, same(i)), ir::makeInt(0, DType::i8)),
                            ir::makeFloat(std::numeric_limits<double>::quiet_NaN(), t), load(acc, same(i)));
    });
    return fb.build({y});
  }

  te::ReduceOp op = k == RedKind::Prod ? te::ReduceOp::Prod : te::ReduceOp::Sum;
  if (ir::isFloat(t)) {
    const DType acc_t = t == DType::f64 ? DType::f64 : DType::f32;
    bool direct = t == acc_t && k != RedKind::Mean;
    ir::Buffer acc =
        fb.reduce(direct ? name : name + "_acc", plan.out_shape, acc_t, plan.extents, op,
                  [&](const te::Indices& i, const te::Indices& r) { return lew::staged(xAt(i, r)); });
    if (direct) return fb.build({acc});
    ir::Buffer y = fb.compute(name, out.shape, t, [&](const te::Indices& i) {
      PrimExpr v = load(acc, same(i));
      if (k == RedKind::Mean) v = v / ir::makeCast(acc_t, plan.count);
      return lew::fromF32(v, t);
    });
    return fb.build({y});
  }
  if (k != RedKind::Mean) return fb.build({fb.reduce(name, plan.out_shape, t, plan.extents, op, xAt)});
  ir::Buffer acc = fb.reduce(
      name + "_acc", plan.out_shape, DType::i64, plan.extents, op,
      [&](const te::Indices& i, const te::Indices& r) { return ir::makeCast(DType::i64, xAt(i, r)); });
  ir::Buffer y = fb.compute(name, out.shape, t, [&](const te::Indices& i) {
    return ir::makeCast(t, lew::truncDiv(load(acc, same(i)), plan.count));
  });
  return fb.build({y});
}

// argmax/argmin: the extreme value (a max/min stage; TIR's max/min skip
// NaN), a NaN flag for floats, then the first (or, with select_last_index,
// the last) index holding it: the kernel picks the first NaN (or the last)
// when there is one, else the first (last) extreme value, and 0 for an empty axis.
ir::PrimFunc legalizeArg(const std::string& name, bool is_max, const Type& x_type, const Type& out,
                         const ir::Attrs& a) {
  namespace te = ir::te;
  te::FuncBuilder fb(name);
  ir::Buffer x = fb.input("x", x_type);
  int64_t rank = static_cast<int64_t>(x_type.rank());
  size_t axis = static_cast<size_t>(normalizeAxis(attrInt(a, "axis"), rank, name.c_str()));
  std::vector<bool> red(x_type.rank(), false);
  red[axis] = true;
  lew::AxesReduce plan = lew::planAxesReduce(x_type.shape, red, attrBool(a, "keepdims"));
  bool last = attrBool(a, "select_last_index");
  DType t = x_type.dtype;
  auto xAt = [&](const te::Indices& i, const te::Indices& r) { return load(x, plan.inputIndices(i, r)); };
  auto same = [&](const te::Indices& i) { return std::vector<PrimExpr>(i.begin(), i.end()); };

  ir::Buffer nan;
  if (ir::isFloat(t))
    nan = lew::anyNaN(fb, name + "_isnan", plan,
                      [&](const std::vector<PrimExpr>& idx) { return load(x, idx); });
  ir::Buffer ext = fb.reduce(name + (is_max ? "_max" : "_min"), plan.out_shape, t, plan.extents,
                             is_max ? te::ReduceOp::Max : te::ReduceOp::Min, xAt);
  const PrimExpr& mid = x_type.shape[axis];
  // first: min over matching k (init min(mid-1, 0)... i.e. 0 for an empty axis);
  // last: max over matching k (init 0).
  PrimExpr init = last ? ir::makeInt(0) : maximum(mid - ir::makeInt(1), ir::makeInt(0));
  PrimExpr none = ir::makeInt(last ? -1 : std::numeric_limits<int64_t>::max());
  ir::Buffer y = fb.reduce(
      name, out.shape, DType::i64, plan.extents, last ? te::ReduceOp::Max : te::ReduceOp::Min,
      [&](const te::Indices& i, const te::Indices& r) {
        PrimExpr v = xAt(i, r);
        PrimExpr match = eq(v, load(ext, same(i)));
        if (nan)
          match = ir::makeSelect(lew::gt(load(nan, same(i)), ir::makeInt(0, DType::i8)),
                                 ir::makeCall("isnan", {v}), match);
        return ir::makeSelect(match, PrimExpr(r[0]), none);
      },
      init);
  return fb.build({y});
}

int64_t inputElems(const std::vector<Type>& in, const Type&, const ir::Attrs&) {
  return staticCount(in[0].shape);
}

void addReduce(std::vector<OpDef>& ops, const std::string& name, RedKind k) {
  OpDef d;
  d.name = name;
  d.pattern = OpPattern::Reduction;
  d.f64 = true;
  d.attrs = {AttrSpec{"axes", AttrKind::Ints, std::nullopt, true},
             AttrSpec{"keepdims", AttrKind::Bool, ir::AttrValue(false)}};
  d.infer = [name](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, name.c_str());
    ew::checkClass(name, x.dtype, DClass::Num);
    std::vector<bool> red = ew::reducedAxes(a, static_cast<int64_t>(x.rank()), name);
    bool keep = attrBool(a, "keepdims");
    Shape s;
    for (size_t i = 0; i < x.rank(); ++i)
      if (!red[i])
        s.push_back(x.shape[i]);
      else if (keep)
        s.push_back(dimConst(1));
    return Type::tensor(x.dtype, s);
  };
  d.compute = [name, k](const std::vector<Tensor>& in, const ir::Attrs& a) {
    return std::vector<Tensor>{reduceCompute(k, in[0], a, name)};
  };
  d.legalize = [name, k](const std::vector<Type>& in, const Type& out, const ir::Attrs& a) {
    return legalizeReduce(name, k, in[0], out, a);
  };
  d.flops = inputElems;
  ops.push_back(std::move(d));
}

// ---------------------------------------------------------------------------
// argmax / argmin.

template <class T>
void argReduce(const T* x, int64_t* out, const ew::Split3& s, bool is_max, bool last) {
  std::vector<T> best(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* base = x + o * s.mid * s.inner;
    int64_t* po = out + o * s.inner;
    std::fill(po, po + s.inner, 0);
    if (s.mid == 0) continue;
    std::copy(base, base + s.inner, best.begin());
    for (int64_t k = 1; k < s.mid; ++k) {
      const T* row = base + k * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) {
        T v = row[j], b = best[j];
        bool take;
        if constexpr (std::is_floating_point_v<T>) {
          if (b != b)
            take = last && v != v;  // the first NaN wins (numpy), or the last
          else if (v != v)
            take = true;
          else
            take = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        } else {
          take = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        }
        if (take) {
          best[j] = v;
          po[j] = k;
        }
      }
    }
  }
}

void addArg(std::vector<OpDef>& ops, const std::string& name, bool is_max) {
  OpDef d;
  d.name = name;
  d.pattern = OpPattern::Reduction;
  d.f64 = true;
  d.attrs = {AttrSpec{"axis", AttrKind::Int, ir::AttrValue(int64_t{0})},
             AttrSpec{"keepdims", AttrKind::Bool, ir::AttrValue(false)},
             AttrSpec{"select_last_index", AttrKind::Bool, ir::AttrValue(false)}};
  d.infer = [name](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, name.c_str());
    ew::checkClass(name, x.dtype, DClass::Num);
    int64_t rank = static_cast<int64_t>(x.rank());
    int64_t axis = normalizeAxis(attrInt(a, "axis"), rank, name.c_str());
    if (axis >= rank)
      throw Error("op '" + name + "': axis " + std::to_string(attrInt(a, "axis")) +
                  " is out of range for rank " + std::to_string(rank));
    Shape s;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis)
        s.push_back(x.shape[static_cast<size_t>(i)]);
      else if (attrBool(a, "keepdims"))
        s.push_back(dimConst(1));
    return Type::tensor(DType::i64, s);
  };
  d.legalize = [name, is_max](const std::vector<Type>& in, const Type& out, const ir::Attrs& a) {
    return legalizeArg(name, is_max, in[0], out, a);
  };
  d.compute = [is_max](const std::vector<Tensor>& in, const ir::Attrs& a) {
    const Tensor& x = in[0];
    size_t axis = static_cast<size_t>(normalizeAxis(attrInt(a, "axis"), x.rank(), "argmax"));
    ew::Split3 s = ew::split3(x.shape(), axis, axis + 1);
    std::vector<int64_t> shape;
    for (size_t i = 0; i < x.shape().size(); ++i)
      if (i != axis)
        shape.push_back(x.shape()[i]);
      else if (attrBool(a, "keepdims"))
        shape.push_back(1);
    Tensor out = Tensor::zeros(DType::i64, shape);
    bool last = attrBool(a, "select_last_index");
    if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) {
      Tensor f = ew::toF32(x);
      argReduce(f.data<float>(), out.mutableData<int64_t>(), s, is_max, last);
    } else {
      ew::dispatchStorage(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        argReduce(x.data<T>(), out.mutableData<int64_t>(), s, is_max, last);
      });
    }
    return std::vector<Tensor>{out};
  };
  d.flops = inputElems;
  ops.push_back(std::move(d));
}

// ---------------------------------------------------------------------------
// cumsum: out[.., i, ..] = the sum of x[.., j, ..] over j <= i (exclusive:
// j < i; reverse: j >= i, or j > i), added in ascending j in the operand's
// dtype (f16/bf16 staged in f32; integers wrap). The kernel and the loop nest
// (a reduction over every j, the excluded terms 0) add the same terms in the
// same order, so they agree exactly.

bool cumsumIncludes(int64_t j, int64_t i, bool exclusive, bool reverse) {
  return reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
}

template <class T>
void cumsumTyped(const T* x, T* out, const ew::Split3& s, bool exclusive, bool reverse) {
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.mid; ++i)
      for (int64_t k = 0; k < s.inner; ++k) {
        T acc = 0;
        for (int64_t j = 0; j < s.mid; ++j)
          if (cumsumIncludes(j, i, exclusive, reverse)) {
            const T v = x[(o * s.mid + j) * s.inner + k];
            if constexpr (std::is_integral_v<T>)  // wraps, as the loop nest
              acc = static_cast<T>(static_cast<std::make_unsigned_t<T>>(acc) +
                                   static_cast<std::make_unsigned_t<T>>(v));
            else
              acc += v;
          }
        out[(o * s.mid + i) * s.inner + k] = acc;
      }
}

void addCumsum(std::vector<OpDef>& ops) {
  OpDef d;
  d.name = "cumsum";
  d.pattern = OpPattern::Opaque;
  d.f64 = true;
  d.attrs = {AttrSpec{"axis", AttrKind::Int, ir::AttrValue(int64_t{0})},
             AttrSpec{"exclusive", AttrKind::Bool, ir::AttrValue(false)},
             AttrSpec{"reverse", AttrKind::Bool, ir::AttrValue(false)}};
  d.infer = [](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, "cumsum");
    if (!ir::isFloat(x.dtype) && x.dtype != DType::i32 && x.dtype != DType::i64)
      throw Error("op 'cumsum' needs a float, i32 or i64 operand, not " +
                  std::string(ir::dtypeName(x.dtype)));
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalizeAxis(attrInt(a, "axis"), rank, "cumsum");
    if (axis >= rank)
      throw Error("op 'cumsum': axis " + std::to_string(attrInt(a, "axis")) + " is out of range for rank " +
                  std::to_string(rank));
    return x;
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs& a) {
    const DType t = in[0].dtype();
    const bool half = t == DType::f16 || t == DType::bf16;
    const Tensor x = half ? ew::toF32(in[0]) : in[0];
    const size_t axis = static_cast<size_t>(normalizeAxis(attrInt(a, "axis"), x.rank(), "cumsum"));
    const ew::Split3 s = ew::split3(x.shape(), axis, axis + 1);
    Tensor out = Tensor::zeros(x.dtype(), x.shape());
    ew::dispatchStorage(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        cumsumTyped(x.data<T>(), out.mutableData<T>(), s, attrBool(a, "exclusive"), attrBool(a, "reverse"));
    });
    return std::vector<Tensor>{half ? ew::fromF32(out, t) : out};
  };
  d.legalize = [](const std::vector<Type>& in, const Type& out, const ir::Attrs& a) {
    namespace te = ir::te;
    te::FuncBuilder fb("cumsum");
    ir::Buffer x = fb.input("x", in[0]);
    const size_t axis = static_cast<size_t>(normalizeAxis(attrInt(a, "axis"), in[0].rank(), "cumsum"));
    const bool exclusive = attrBool(a, "exclusive"), reverse = attrBool(a, "reverse");
    const DType acc_t = lew::isHalf(out.dtype) ? DType::f32 : out.dtype;
    ir::Buffer sum =
        fb.reduce(lew::isHalf(out.dtype) ? "cumsum_acc" : "cumsum", out.shape, acc_t, {in[0].shape[axis]},
                  te::ReduceOp::Sum, [&](const te::Indices& i, const te::Indices& r) {
                    std::vector<PrimExpr> idx(i.begin(), i.end());
                    idx[axis] = r[0];
                    const PrimExpr j = r[0], k = i[axis];
                    const PrimExpr take = reverse ? (exclusive ? lew::gt(j, k) : lew::ge(j, k))
                                                  : (exclusive ? lew::lt(j, k) : lew::le(j, k));
                    const PrimExpr v = lew::staged(load(x, idx));
                    return ir::makeSelect(take, v, lew::lit(v, 0));
                  });
    if (!lew::isHalf(out.dtype)) return fb.build({sum});
    ir::Buffer y = fb.compute("cumsum", out.shape, out.dtype, [&](const te::Indices& i) {
      return lew::fromF32(load(sum, std::vector<PrimExpr>(i.begin(), i.end())), out.dtype);
    });
    return fb.build({y});
  };
  d.flops = [](const std::vector<Type>& in, const Type&, const ir::Attrs& a) {
    const Type& x = in[0];
    int64_t n;
    const auto axis =
        static_cast<size_t>(normalizeAxis(attrInt(a, "axis"), static_cast<int64_t>(x.rank()), "cumsum"));
    return ir::asConstInt(x.shape[axis], &n) ? flopsProduct(staticCount(x.shape), n) : staticCount(x.shape);
  };
  ops.push_back(std::move(d));
}

}  // namespace

void registerReduceOps(std::vector<OpDef>& ops) {
  addCumsum(ops);
  addReduce(ops, "sum", RedKind::Sum);
  addReduce(ops, "mean", RedKind::Mean);
  addReduce(ops, "max", RedKind::Max);
  addReduce(ops, "min", RedKind::Min);
  addReduce(ops, "prod", RedKind::Prod);
  addArg(ops, "argmax", true);
  addArg(ops, "argmin", false);
}

}  // namespace mlcc::ops
