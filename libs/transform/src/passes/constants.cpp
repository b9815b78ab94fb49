// Constants for the passes that compute with them (see constants.h).
#include "constants.h"

#include <span>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::transform {

bool sameTensorType(const ir::Type& a, const ir::Type& b) {
  if (!a.isTensor() || !b.isTensor() || a.dtype != b.dtype || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!ops::dimEqual(a.shape[i], b.shape[i])) return false;
  return true;
}

void Constants::scan(const ir::GraphFunc& f) {
  for (const auto& block : f.blocks)
    for (const auto& b : block.bindings)
      if (b.value.kind == ir::ValueKind::Const) consts_[b.var.get()] = b.value;
}

const ir::WeightStore* Constants::store() {
  if (!store_) {
    try {
      store_ = std::make_shared<ir::WeightStore>(ir::WeightStore::open(module_));
    } catch (const Error&) {
      store_ = std::shared_ptr<ir::WeightStore>();
    }
  }
  return store_->get();
}

const ir::Tensor* Constants::value(const ir::GraphVarNode* v) {
  if (auto it = values_.find(v); it != values_.end()) return &it->second;
  auto c = consts_.find(v);
  if (c == consts_.end() || !v->type.isTensor()) return nullptr;
  std::vector<int64_t> shape;
  if (!ops::staticShape(v->type.shape, &shape)) return nullptr;
  const ir::GraphValue& val = c->second;
  std::optional<ir::Tensor> t;
  if (val.is_inline) {
    auto bytes = std::as_bytes(std::span(val.data));
    std::optional<int64_t> need = checkedByteSize(shape, ir::dtypeBytes(v->type.dtype));
    if (!need || bytes.size() != static_cast<uint64_t>(*need)) return nullptr;
    t = ir::Tensor::copyOf(v->type.dtype, shape, bytes);
  } else {
    if (ctx_.new_weights)
      for (const auto& [name, w] : ctx_.new_weights->tensors)
        if (name == val.weight) t = w;
    if (!t) {
      const ir::WeightStore* s = store();
      if (!s || !s->contains(val.weight)) return nullptr;
      ir::WeightView w = s->get(val.weight);
      if (w.dtype != v->type.dtype || w.shape != shape) return nullptr;
      t = ir::Tensor::copyOf(w.dtype, w.shape, w.data);
    }
  }
  return &values_.emplace(v, std::move(*t)).first->second;
}

std::string Constants::uniqueWeightName(const std::string& base, bool numbered) {
  if (!taken_filled_) {
    taken_filled_ = true;
    if (const ir::WeightStore* s = store())
      for (auto& n : s->names()) taken_.insert(n);
    for (const auto& fn : module_.functions)
      if (const auto* g = std::get_if<ir::GraphFunc>(&fn))
        for (const auto& block : g->blocks)
          for (const auto& b : block.bindings)
            if (b.value.kind == ir::ValueKind::Const && !b.value.is_inline) taken_.insert(b.value.weight);
  }
  if (ctx_.new_weights)
    for (const auto& [name, w] : ctx_.new_weights->tensors) taken_.insert(name);
  std::string name = base;
  if (numbered) {
    do name = base + "." + std::to_string(next_++);
    while (taken_.count(name));
  } else {
    for (int k = 1; taken_.count(name); ++k) name = base + "." + std::to_string(k);
  }
  taken_.insert(name);
  return name;
}

std::optional<ir::GraphValue> Constants::makeConstant(const ir::Tensor& t, const std::string& base,
                                                      bool numbered) {
  if (ir::isInlineConstant(t.dtype(), t.shape())) return ir::inlineConstValue(t);
  if (!ctx_.new_weights) return std::nullopt;
  ir::GraphValue v;
  v.kind = ir::ValueKind::Const;
  v.weight = uniqueWeightName(base, numbered);
  ctx_.new_weights->tensors.emplace_back(v.weight, t.isView() ? t.clone() : t);
  return v;
}

}  // namespace mlcc::transform
