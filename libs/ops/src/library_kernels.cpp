// Library kernels and the binding of op groups to them (see library_kernels.h).
#include "mlcc/ops/library_kernels.h"

#include <unordered_map>
#include <unordered_set>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"

namespace mlcc::ops {

namespace {

constexpr const char* kLibraries[] = {"blas", "cublas"};
constexpr const char* kBases[] = {"dense", "matmul"};
constexpr const char* kSuffixes[] = {"", "_bias", "_relu", "_bias_relu"};

// The group's bindings by the variable they define.
class GroupView {
 public:
  explicit GroupView(std::span<const ir::Binding* const> body) {
    for (const ir::Binding* b : body) defs_[b->var.get()] = b;
  }
  // The op binding defining `v` in the group, or null for a group input.
  const ir::Binding* def(const ir::GraphVar& v) const {
    auto it = defs_.find(v.get());
    return it == defs_.end() ? nullptr : it->second;
  }
  bool isInput(const ir::GraphVar& v) const { return def(v) == nullptr; }
  // `b` is `op(...)` with `nargs` operands.
  static bool is(const ir::Binding* b, const char* op, size_t nargs) {
    return b && b->value.kind == ir::ValueKind::Op && b->value.callee == op && b->value.args.size() == nargs;
  }
  // The expression a value stands for, e.g. "relu(add(matmul(%x, permute_dims(%w)), %b))".
  std::string formula(const ir::GraphVar& v, int depth = 0) const {
    const ir::Binding* b = def(v);
    if (!b || depth > 8) return "%" + v->name;
    std::string s = b->value.callee + "(";
    for (size_t i = 0; i < b->value.args.size(); ++i)
      s += (i ? ", " : "") + formula(b->value.args[i], depth + 1);
    return s + ")";
  }

 private:
  std::unordered_map<const ir::GraphVarNode*, const ir::Binding*> defs_;
};

// A permute_dims that transposes a rank-2 operand: no axes (all reversed)
// or axes [1, 0] (also spelt with negative axes).
bool transposesMatrix(const ir::Binding& permute) {
  if (!hasAttr(permute.value.attrs, "axes")) return true;
  std::vector<int64_t> axes = attrInts(permute.value.attrs, "axes");
  return axes.size() == 2 && (axes[0] + 2) % 2 == 1 && (axes[1] + 2) % 2 == 0;
}

// Why the operands' types do not fit kernel `k` (empty when they do).
std::string typeMismatch(const LibraryKernel& k, const std::vector<ir::GraphVar>& operands,
                         const ir::Type& result) {
  for (size_t i = 0; i < operands.size(); ++i) {
    const ir::Type& t = operands[i]->type;
    if (!t.isTensor()) return k.params[i] + " (%" + operands[i]->name + ") is a tuple";
    if (t.dtype != ir::DType::f32)
      return k.params[i] + " (%" + operands[i]->name + ") is " + std::string(ir::dtypeName(t.dtype)) +
             "; the kernel takes f32";
  }
  const ir::Type& lhs = operands[0]->type;
  const ir::Type& rhs = operands[1]->type;
  if (lhs.rank() < 1 || rhs.rank() < 1) return "the kernel does not take scalar operands";
  if (k.base == "dense" && rhs.rank() != 2)
    return "w (%" + operands[1]->name + ": " + ir::printType(rhs) + ") is not a matrix";
  if (k.bias) {
    const ir::Type& bias = operands[2]->type;
    int64_t n = 0, d = 0;
    bool ok = result.isTensor() && result.rank() >= 1 && ir::asConstInt(result.shape.back(), &n) &&
              bias.rank() >= 1 && ir::asConstInt(bias.shape.back(), &d) && d == n;
    for (size_t i = 0; ok && i + 1 < bias.rank(); ++i) ok = ir::asConstInt(bias.shape[i], &d) && d == 1;
    if (!ok)
      return "bias (%" + operands[2]->name + ": " + ir::printType(bias) +
             ") is not a vector along the output's last dimension";
  }
  return {};
}

}  // namespace

std::string LibraryKernel::semantics() const {
  std::string s = base + "(" + params[0] + ", " + params[1] + ")";
  if (bias) s += " + bias";
  return relu ? "relu(" + s + ")" : s;
}

std::optional<LibraryKernel> findLibraryKernel(std::string_view symbol) {
  for (const char* lib : kLibraries)
    for (const char* base : kBases)
      for (const char* suffix : kSuffixes) {
        LibraryKernel k;
        k.library = lib;
        k.base = base;
        k.symbol = std::string(lib) + "." + base + suffix;
        if (k.symbol != symbol) continue;
        const std::string_view sfx(suffix);
        k.bias = sfx.find("_bias") != std::string_view::npos;
        k.relu = sfx.find("_relu") != std::string_view::npos;
        k.params =
            k.base == "dense" ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"a", "b"};
        if (k.bias) k.params.push_back("bias");
        return k;
      }
  return std::nullopt;
}

std::string libraryKernelList(std::string_view library) {
  std::string out;
  for (const char* base : kBases)
    for (const char* suffix : kSuffixes)
      out += (out.empty() ? "" : ", ") + std::string(library) + "." + base + suffix;
  return out;
}

KernelBinding bindLibraryKernel(const LibraryKernel& k, std::span<const ir::Binding* const> body) {
  KernelBinding r;
  if (body.empty()) {
    r.mismatch = "the group is empty";
    r.wrong_ops = true;
    return r;
  }
  const GroupView g(body);
  const ir::GraphVar& result = body.back()->var;
  auto wrongOps = [&] {
    r.operands.clear();
    r.wrong_ops = true;
    r.mismatch = k.symbol + " computes " + k.semantics() + ", but the ops compute " + g.formula(result);
    return r;
  };
  for (const ir::Binding* b : body)
    if (b->value.kind != ir::ValueKind::Op) return wrongOps();

  std::unordered_set<const ir::Binding*> used;
  const ir::Binding* node = body.back();
  if (k.relu) {
    if (!GroupView::is(node, "relu", 1)) return wrongOps();
    used.insert(node);
    node = g.def(node->value.args[0]);
  }
  ir::GraphVar bias;
  if (k.bias) {
    if (!GroupView::is(node, "add", 2)) return wrongOps();
    used.insert(node);
    const auto& a = node->value.args;
    const bool first_is_product = !g.isInput(a[0]) && g.isInput(a[1]);
    const bool second_is_product = g.isInput(a[0]) && !g.isInput(a[1]);
    if (!first_is_product && !second_is_product) return wrongOps();
    bias = first_is_product ? a[1] : a[0];
    node = g.def(first_is_product ? a[0] : a[1]);
  }
  if (!node) return wrongOps();
  const ir::Binding* transpose = nullptr;  // permute_dims(w) of matmul(x, permute_dims(w))
  const auto& a = node->value.args;
  if (k.base == "dense" && GroupView::is(node, "dense", 2) && g.isInput(a[0]) && g.isInput(a[1])) {
    r.operands = {a[0], a[1]};
  } else if (k.base == "dense" && GroupView::is(node, "matmul", 2) && g.isInput(a[0]) &&
             GroupView::is(g.def(a[1]), "permute_dims", 1) && g.isInput(g.def(a[1])->value.args[0])) {
    transpose = g.def(a[1]);
    used.insert(transpose);
    r.operands = {a[0], transpose->value.args[0]};
  } else if (k.base == "matmul" && GroupView::is(node, "matmul", 2) && g.isInput(a[0]) && g.isInput(a[1])) {
    r.operands = {a[0], a[1]};
  } else {
    return wrongOps();
  }
  used.insert(node);
  if (used.size() != body.size()) return wrongOps();
  if (k.bias) r.operands.push_back(bias);
  r.mismatch = typeMismatch(k, r.operands, result->type);
  if (r.mismatch.empty() && transpose && !transposesMatrix(*transpose))
    r.mismatch = "%" + transpose->var->name + " = permute_dims(...) does not swap the two axes of a matrix";
  if (!r.mismatch.empty()) r.mismatch = k.symbol + ": " + r.mismatch;
  return r;
}

}  // namespace mlcc::ops
