// Layouts (mlcc/ops/layout.h) and the layout_transform op (pattern `inj`):
// a tensor moved from one layout to another, e.g. NCHW -> NCHW16c (the
// blocked channel layout that the convert-layout pass gives convolutions)
// or OIHW -> OIHW16i16o (their packed weights). Each axis of the source is
// a function of one or two axes of the result (a copy, a block's outer or
// inner part, or outer * factor + inner), so the reference kernel is the
// gather by per-axis offset tables of manipulate_util.h and the TensorIR
// compute is one stage of index arithmetic.
#include "mlcc/ops/layout.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "legalize_util_mv.h"
#include "manipulate_util.h"
#include "op_families.h"

namespace mlcc::ops {

using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

namespace {

Error layoutError(std::string_view text, const std::string& msg) {
  return Error("layout '" + std::string(text) + "': " + msg);
}

}  // namespace

Layout Layout::parse(std::string_view text) {
  Layout l;
  std::set<char> seen;
  size_t i = 0;
  while (i < text.size()) {
    int64_t factor = 0;
    size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (factor > (int64_t{1} << 40)) throw layoutError(text, "a block factor is too large");
      factor = factor * 10 + (text[i++] - '0');
    }
    if (i == text.size()) throw layoutError(text, "a factor must be followed by a lower-case axis");
    const char c = text[i++];
    const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    if (!upper && !lower) throw layoutError(text, std::string("'") + c + "' is no axis (letters A-Z, a-z)");
    if (upper && digits != i - 1)
      throw layoutError(text, std::string("primal axis '") + c + "' takes no factor");
    if (lower && factor < 1)
      throw layoutError(text, std::string("block axis '") + c + "' needs a factor >= 1");
    if (!seen.insert(c).second) throw layoutError(text, std::string("axis '") + c + "' appears twice");
    l.axes_.push_back({c, lower ? factor : 0});
  }
  if (l.axes_.empty()) throw layoutError(text, "no axes");
  for (const Axis& a : l.axes_)
    if (a.factor && !seen.count(static_cast<char>(std::toupper(a.name))))
      throw layoutError(text, std::string("block axis '") + a.name + "' has no primal axis '" +
                                  static_cast<char>(std::toupper(a.name)) + "'");
  return l;
}

std::string nchwcLayout(int64_t block) { return "NCHW" + std::to_string(block) + "c"; }

std::string Layout::str() const {
  std::string s;
  for (const Axis& a : axes_) s += (a.factor ? std::to_string(a.factor) : "") + a.name;
  return s;
}

std::string Layout::primal() const {
  std::string s;
  for (const Axis& a : axes_)
    if (!a.factor) s += a.name;
  return s;
}

int Layout::position(char name) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == name) return static_cast<int>(i);
  return -1;
}

int64_t Layout::factorOf(char primal) const {
  const int p = position(static_cast<char>(std::tolower(primal)));
  return p < 0 ? 0 : axes_[p].factor;
}

namespace {

const char* kOp = "layout_transform";

Error opError(const std::string& msg) { return Error(std::string("op '") + kOp + "': " + msg); }

// Checks that `from` and `to` describe the same tensor and that each primal
// axis is split by the same factor in both or in at most one of them.
void checkPair(const Layout& from, const Layout& to) {
  std::string a = from.primal(), b = to.primal();
  std::string sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  if (sa != sb)
    throw opError("layouts '" + from.str() + "' and '" + to.str() + "' have different primal axes");
  for (char p : a) {
    const int64_t f = from.factorOf(p), t = to.factorOf(p);
    if (f && t && f != t)
      throw opError("axis " + std::string(1, p) + " is split by " + std::to_string(f) + " in '" + from.str() +
                    "' and by " + std::to_string(t) + " in '" + to.str() +
                    "'; a transform between two block sizes is not supported yet (go through '" + a + "')");
  }
}

// Source axis k's index from the result index o:
// ((o[outer] * scale + (inner >= 0 ? o[inner] : 0)) / div) % mod (mod 0: none).
struct SourceAxis {
  int outer;
  int64_t scale = 1;
  int inner = -1;
  int64_t div = 1;
  int64_t mod = 0;
};

std::vector<SourceAxis> sourceAxes(const Layout& from, const Layout& to) {
  std::vector<SourceAxis> out;
  for (const Layout::Axis& s : from.axes()) {
    const char primal = static_cast<char>(std::toupper(s.name));
    const int64_t f_from = from.factorOf(primal), f_to = to.factorOf(primal);
    const int to_outer = to.position(primal), to_inner = to.position(static_cast<char>(std::tolower(primal)));
    SourceAxis a{to_outer};
    if (s.factor) {  // a block in the source
      if (f_to)
        a.outer = to_inner;  // the same block in the result
      else
        a.mod = s.factor;
    } else if (f_from && !f_to) {  // split in the source only: its outer part
      a.div = f_from;
    } else if (!f_from && f_to) {  // split in the result only: recombine
      a.scale = f_to;
      a.inner = to_inner;
    }
    out.push_back(a);
  }
  return out;
}

std::pair<Layout, Layout> layoutsOf(const ir::Attrs& attrs) {
  try {
    Layout from = Layout::parse(attrStr(attrs, "src_layout")),
           to = Layout::parse(attrStr(attrs, "dst_layout"));
    checkPair(from, to);
    return {from, to};
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("op '", 0) == 0) throw;
    throw opError(msg);
  }
}

Type inferLayoutTransform(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, kOp);
  auto [from, to] = layoutsOf(attrs);
  return Type::tensor(x.dtype, transformedShape(from, to, x.shape));
}

std::vector<Tensor> computeLayoutTransform(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  auto [from, to] = layoutsOf(attrs);
  std::vector<int64_t> out_shape;
  if (!staticShape(transformedShape(from, to, constShape(x.shape())), &out_shape))
    throw opError("the result shape is symbolic");
  const std::vector<int64_t> strides = detail::rowMajorStrides(x.shape());
  std::vector<std::vector<int64_t>> tables(out_shape.size());
  for (size_t d = 0; d < out_shape.size(); ++d) tables[d].assign(out_shape[d], 0);
  // Each source axis adds stride * its index, a separable sum over the
  // result axes it reads.
  const auto axes = sourceAxes(from, to);
  for (size_t k = 0; k < axes.size(); ++k) {
    const SourceAxis& a = axes[k];
    for (int64_t i = 0; i < out_shape[a.outer]; ++i) {
      int64_t v = i * a.scale;
      if (a.inner < 0) v = a.mod ? (v / a.div) % a.mod : v / a.div;
      tables[a.outer][i] += v * strides[k];
    }
    if (a.inner >= 0)
      for (int64_t i = 0; i < out_shape[a.inner]; ++i) tables[a.inner][i] += i * strides[k];
  }
  return {detail::gatherByTables(x, out_shape, tables)};
}

ir::PrimFunc legalizeLayoutTransform(const std::vector<Type>& inputs, const Type& output,
                                     const ir::Attrs& attrs) {
  namespace lm = legal_mv;
  auto [from, to] = layoutsOf(attrs);
  const auto axes = sourceAxes(from, to);
  return lm::singleStage(kOp, inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src;
    for (const SourceAxis& a : axes) {
      PrimExpr v = lm::mul(o[a.outer], lm::idx(a.scale));
      if (a.inner >= 0) v = lm::add(v, o[a.inner]);
      if (a.div != 1) v = lm::floorDiv(v, lm::idx(a.div));
      if (a.mod) v = lm::floorMod(v, lm::idx(a.mod));
      src.push_back(v);
    }
    return ir::makeLoad(in[0], src);
  });
}

}  // namespace

Shape transformedShape(const Layout& from, const Layout& to, const Shape& shape) {
  checkPair(from, to);
  if (shape.size() != from.rank())
    throw opError("layout '" + from.str() + "' has " + std::to_string(from.rank()) + " axes but the tensor " +
                  detail::shapeText(shape) + " has rank " + std::to_string(shape.size()));
  Shape out;
  for (const Layout::Axis& t : to.axes()) {
    if (t.factor) {
      out.push_back(dimConst(t.factor));
      continue;
    }
    const char p = t.name;
    const int64_t f_from = from.factorOf(p), f_to = to.factorOf(p);
    const PrimExpr& d = shape[from.position(p)];
    if (f_from == f_to) {  // unchanged (both unsplit, or the same block)
      out.push_back(d);
      continue;
    }
    int64_t n;
    if (!ir::asConstInt(d, &n))
      throw opError("axis " + std::string(1, p) + " of " + detail::shapeText(shape) +
                    " is symbolic; blocking it needs a constant");
    if (f_from) {  // unsplit in the result: outer * block
      out.push_back(dimConst(n * f_from));
    } else {
      if (n % f_to != 0)
        throw opError("axis " + std::string(1, p) + " has " + std::to_string(n) +
                      " elements, not a multiple of " + "the block of " + std::to_string(f_to) + " in '" +
                      to.str() + "'");
      out.push_back(dimConst(n / f_to));
    }
  }
  return out;
}

Tensor relayout(const Tensor& t, const std::string& from, const std::string& to) {
  return computeLayoutTransform({t}, {{"src_layout", ir::AttrValue(from)}, {"dst_layout", ir::AttrValue(to)}})
      .at(0);
}

void registerLayoutOps(std::vector<OpDef>& ops) {
  OpDef d;
  d.name = kOp;
  d.pattern = OpPattern::Injective;
  d.attrs = {{"src_layout", AttrKind::Str, std::nullopt}, {"dst_layout", AttrKind::Str, std::nullopt}};
  d.infer = inferLayoutTransform;
  d.compute = computeLayoutTransform;
  d.flops = detail::zeroFlops;
  d.legalize = legalizeLayoutTransform;
  ops.push_back(std::move(d));
}

}  // namespace mlcc::ops
