// The converter of ONNX Einsum, as graph ops: each operand's subscripts that
// no other operand and not the output name are summed out first; operands
// are then contracted left to right, two at a time, as one batched matmul
// (each side permuted to [batch, own, contracted] / [batch, contracted,
// own] and reshaped to 3-D); the result is permuted to the output's order.
// An ellipsis stands for the same leading dimensions in every operand that
// has it; a subscript repeated within one operand takes its diagonal
// first. Refused with a clear error: ellipsis dimensions that broadcast,
// dimensions of one subscript that differ between operands, a diagonal over
// a symbolic dimension.
#include <algorithm>
#include <map>

#include "convert_util.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/shape.h"

namespace mlcc::frontend::onnx_import {

namespace {

// One operand (or an intermediate result) with a label per dimension.
struct Labeled {
  ValuePtr value;
  std::string labels;  // one char per dimension; ellipsis dims are '0' + k
};

// The equation's terms: operands' subscripts and the output's (absent: the
// implicit output, every subscript used once, in alphabetical order, after
// the ellipsis dims).
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

Equation parseEquation(NodeCtx& c, std::string eq, const std::vector<ValuePtr>& operands) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  Equation out;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    out.inputs.push_back(lhs.substr(start, comma - start));
  out.inputs.push_back(lhs.substr(start));
  if (out.inputs.size() != operands.size())
    c.fail("the equation '" + eq + "' has " + std::to_string(out.inputs.size()) + " operand term(s) for " +
           std::to_string(operands.size()) + " input(s)");
  // Ellipsis: the same number of leading dims wherever it appears.
  std::optional<size_t> ellipsis_rank;
  auto expand = [&](std::string term, std::optional<size_t> rank) -> std::string {
    const size_t dots = term.find("...");
    for (char ch : term)
      if (ch != '.' && !std::isalpha(static_cast<unsigned char>(ch)))
        c.fail("the equation '" + eq + "' has the character '" + std::string(1, ch) +
               "' (letters and '...' only)");
    if (dots == std::string::npos) {
      if (term.find('.') != std::string::npos) c.fail("the equation '" + eq + "' has a '.' outside '...'");
      return term;
    }
    const std::string rest = term.substr(0, dots) + term.substr(dots + 3);
    if (rest.find('.') != std::string::npos)
      c.fail("the equation '" + eq + "' has more than one '...' in a term");
    // The output's stands for as many dims as the operands' (none when no
    // operand has one).
    if (rank && *rank < rest.size())
      c.fail("the term '" + term + "' names more dimensions than its operand has");
    const size_t k = rank ? *rank - rest.size() : ellipsis_rank.value_or(0);
    if (ellipsis_rank && *ellipsis_rank != k)
      c.fail("'...' stands for " + std::to_string(*ellipsis_rank) + " and " + std::to_string(k) +
             " dimensions in different operands (ellipsis broadcasting is not supported yet)");
    ellipsis_rank = k;
    std::string dims;
    for (size_t i = 0; i < k; ++i) dims += static_cast<char>('0' + i);
    return term.substr(0, dots) + dims + term.substr(dots + 3);
  };
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string written = out.inputs[i];
    out.inputs[i] = expand(written, operands[i]->type.rank());
    if (out.inputs[i].size() != operands[i]->type.rank())
      c.fail("the term '" + written + "' has " + std::to_string(out.inputs[i].size()) +
             " subscripts for an operand of rank " + std::to_string(operands[i]->type.rank()));
  }
  if (arrow != std::string::npos) {
    out.output = expand(eq.substr(arrow + 2), std::nullopt);
    std::string sorted = out.output;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      c.fail("the output term '" + eq.substr(arrow + 2) + "' repeats a subscript");
    for (char ch : out.output)
      if (std::none_of(out.inputs.begin(), out.inputs.end(),
                       [&](const std::string& t) { return t.find(ch) != std::string::npos; }))
        c.fail("the output subscript '" + std::string(1, ch) + "' is in no operand");
  } else {
    std::map<char, int> uses;
    for (const auto& t : out.inputs)
      for (char ch : t) ++uses[ch];
    for (const auto& [ch, n] : uses)  // '0'.. (ellipsis) sort before the letters
      if (n == 1 || ch < 'A') out.output += ch;
  }
  return out;
}

bool contains(const std::string& s, char ch) { return s.find(ch) != std::string::npos; }

ValuePtr permuted(NodeCtx& c, const Labeled& x, const std::string& order, const std::string& name) {
  std::vector<int64_t> axes;
  for (char ch : order) axes.push_back(static_cast<int64_t>(x.labels.find(ch)));
  bool identity = true;
  for (size_t i = 0; i < axes.size(); ++i) identity &= axes[i] == static_cast<int64_t>(i);
  if (identity) return x.value;
  return c.im.emit("permute_dims", {x.value}, {{"axes", ir::AttrValue::ints(axes)}}, name);
}

// x with the subscripts not in `keep` summed out.
Labeled sumOut(NodeCtx& c, const Labeled& x, const std::string& keep, const std::string& name) {
  std::vector<int64_t> axes;
  std::string left;
  for (size_t i = 0; i < x.labels.size(); ++i)
    (contains(keep, x.labels[i]) ? left += x.labels[i] : (axes.push_back(static_cast<int64_t>(i)), left));
  if (axes.empty()) return x;
  return {c.im.emit("sum", {x.value}, {{"axes", ir::AttrValue::ints(axes)}}, name), left};
}

// The dims of x's subscripts `labels`, in that order.
std::vector<ir::PrimExpr> dimsOf(const Labeled& x, const std::string& labels) {
  std::vector<ir::PrimExpr> d;
  for (char ch : labels) d.push_back(x.value->type.shape[x.labels.find(ch)]);
  return d;
}

// a and b contracted over their shared subscripts not in `keep`.
Labeled contract(NodeCtx& c, const Labeled& a, const Labeled& b, const std::string& keep,
                 const std::string& name) {
  std::string batch, own_a, own_b, inner;
  for (char ch : a.labels) {
    if (!contains(b.labels, ch))
      own_a += ch;
    else
      (contains(keep, ch) ? batch : inner) += ch;
  }
  for (char ch : b.labels)
    if (!contains(a.labels, ch)) own_b += ch;
  for (char ch : batch + inner)
    if (!ops::dimEqual(a.value->type.shape[a.labels.find(ch)], b.value->type.shape[b.labels.find(ch)]))
      c.fail("subscript '" + std::string(1, ch) + "' has different dimensions in two operands (" +
             ir::printType(a.value->type) + ", " + ir::printType(b.value->type) + ")");
  auto flat = [](const std::vector<ir::PrimExpr>& d) { return dimProduct(d, 0, d.size()); };
  const auto batch_dims = dimsOf(a, batch), a_dims = dimsOf(a, own_a), b_dims = dimsOf(b, own_b),
             k_dims = dimsOf(a, inner);
  ValuePtr a3 = reshapeTo(c, permuted(c, a, batch + own_a + inner, name + "_a"),
                          {flat(batch_dims), flat(a_dims), flat(k_dims)}, name + "_a3");
  ValuePtr b3 = reshapeTo(c, permuted(c, b, batch + inner + own_b, name + "_b"),
                          {flat(batch_dims), flat(k_dims), flat(b_dims)}, name + "_b3");
  ValuePtr y = c.im.emit("matmul", {a3, b3}, {}, name + "_mm");
  std::vector<ir::PrimExpr> shape = batch_dims;
  shape.insert(shape.end(), a_dims.begin(), a_dims.end());
  shape.insert(shape.end(), b_dims.begin(), b_dims.end());
  return {reshapeTo(c, y, shape, name + "_c"), batch + own_a + own_b};
}

// x with each subscript repeated within it reduced to its diagonal
// ('bii' -> 'bi'): the elements off the diagonal replaced by 0 (where, so
// that an inf there cannot make a NaN), then that axis summed.
Labeled diagonals(NodeCtx& c, Labeled x, const std::string& name) {
  for (size_t q = 1; q < x.labels.size(); ++q) {
    const size_t p = x.labels.find(x.labels[q]);
    if (p == q) continue;
    const auto& shape = x.value->type.shape;
    const std::string what = "the diagonal of subscript '" + std::string(1, x.labels[q]) + "'";
    const int64_t n = staticDim(c, shape[p], what);
    if (staticDim(c, shape[q], what) != n)
      c.fail(what + " has dimensions " + std::to_string(n) + " and " +
             std::to_string(staticDim(c, shape[q], what)));
    std::vector<int64_t> mshape(x.labels.size(), 1);
    mshape[p] = mshape[q] = n;
    ir::Tensor mask = ir::Tensor::zeros(ir::DType::boolean, mshape);
    for (int64_t i = 0; i < n; ++i) mask.set(i * n + i, 1);  // row-major [.., n, .., n, ..] with unit dims
    const std::string tag = name + "_" + std::to_string(q);
    auto kept = c.im.emit(
        "where",
        {c.im.constant(mask, tag + "_eye"), x.value, c.im.scalar(x.value->type.dtype, 0.0, tag + "_0")}, {},
        tag + "_masked");
    x.value =
        c.im.emit("sum", {kept}, {{"axes", ir::AttrValue::ints({static_cast<int64_t>(q)})}}, tag + "_diag");
    x.labels.erase(q, 1);
    --q;
  }
  return x;
}

std::vector<ValuePtr> einsum(NodeCtx& c) {
  std::vector<ValuePtr> operands;
  for (size_t i = 0; i < c.numInputs(); ++i) operands.push_back(c.in(i));
  if (operands.empty()) c.fail("Einsum needs at least one input");
  const Equation eq = parseEquation(c, c.attrStr("equation", ""), operands);
  const std::string n = c.outName();
  for (const auto& v : operands)
    if (v->type.dtype != operands[0]->type.dtype) c.fail("the inputs must have one dtype");
  // The subscripts still needed after operand i: the output's and those of
  // the operands after it.
  auto neededAfter = [&](size_t i) {
    std::string s = eq.output;
    for (size_t j = i + 1; j < operands.size(); ++j) s += eq.inputs[j];
    return s;
  };
  std::vector<Labeled> terms;
  for (size_t i = 0; i < operands.size(); ++i)
    terms.push_back(diagonals(c, {operands[i], eq.inputs[i]}, n + "_d" + std::to_string(i)));
  Labeled acc = sumOut(c, terms[0], neededAfter(0) + (operands.size() > 1 ? eq.inputs[1] : ""), n + "_s0");
  for (size_t i = 1; i < operands.size(); ++i) {
    const std::string tag = n + "_" + std::to_string(i);
    Labeled next = sumOut(c, terms[i], neededAfter(i) + acc.labels, tag + "_s");
    acc = contract(c, acc, next, neededAfter(i), tag);
  }
  acc = sumOut(c, acc, eq.output, n + "_sum");
  if (acc.labels.size() != eq.output.size()) c.fail("internal: Einsum result labels '" + acc.labels + "'");
  return {permuted(c, acc, eq.output, n)};
}

}  // namespace

void registerEinsumConverter(ConverterTable& t) { t["Einsum"] = einsum; }

}  // namespace mlcc::frontend::onnx_import
