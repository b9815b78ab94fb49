// Structural equality and hashing (see structural.h).
//
// One recursive walker, the Encoder, turns an IR object into a canonical
// stream of 64-bit words: a tag for every node kind and variant, a length
// before every list, strings and inline data packed into words, floats as
// the bits of their double. Local variables, buffers, graph variables and
// trace random variables are written as the index at which they were first
// met (defined, or used while unbound), never by name or address; a
// definition always opens a fresh index, so shadowing is handled like any
// alpha-renaming. The encoding is injective for a fixed walk, so:
//   equal  <=> the two streams are equal (a bijection between the variables
//              of both sides is implied by equal index sequences)
//   hash    = a fixed 64-bit mix of the stream (no std::hash, no pointers),
// which makes the hash consistent with equality by construction.
#include "mlcc/ir/structural.h"

#include <bit>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "mlcc/ir/printer.h"

namespace mlcc::ir {

namespace {

// Where the encoder's words go.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void put(uint64_t word) = 0;
};

// Records the stream (the first side of an equality test).
class RecordSink : public Sink {
 public:
  void put(uint64_t word) override { words.push_back(word); }
  std::vector<uint64_t> words;
};

// Compares the stream with a recorded one (the second side).
class CompareSink : public Sink {
 public:
  explicit CompareSink(const std::vector<uint64_t>& expected) : expected_(expected) {}
  void put(uint64_t word) override {
    if (equal_ && (pos_ >= expected_.size() || expected_[pos_] != word)) equal_ = false;
    ++pos_;
  }
  bool equal() const { return equal_ && pos_ == expected_.size(); }

 private:
  const std::vector<uint64_t>& expected_;
  size_t pos_ = 0;
  bool equal_ = true;
};

// An xxHash64-style accumulator with fixed constants: stable across runs and
// platforms (it sees only words, never bytes of memory).
class HashSink : public Sink {
 public:
  void put(uint64_t word) override {
    state_ ^= round(word);
    state_ = std::rotl(state_, 27) * kPrime1 + kPrime4;
    ++count_;
  }
  uint64_t finish() const {
    uint64_t h = state_ + count_ * kPrime5;
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    h ^= h >> 32;
    return h;
  }

 private:
  static constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
  static constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
  static constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
  static constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
  static constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;
  static uint64_t round(uint64_t w) { return std::rotl(w * kPrime2, 31) * kPrime1; }
  uint64_t state_ = kPrime5;
  uint64_t count_ = 0;
};

// Tags that start each node or variant in the stream. Values are part of the
// hash: append new tags at the end, never renumber.
enum Tag : uint64_t {
  kNull = 1,
  kExpr,
  kVarDef,
  kVarUse,
  kBufferDef,
  kBufferUse,
  kGraphVarDef,
  kGraphVarUse,
  kTraceDef,
  kTraceUse,
  kStmt,
  kTensorType,
  kTupleType,
  kAttr,
  kValue,
  kGraphFunc,
  kPrimFunc,
  kModule,
  kTrace,
  kInst,
  kDecision,
};

// Index of each node by first encounter.
template <class Key>
class Numbering {
 public:
  // Fresh index for a definition (rebinding `key` if it was bound).
  uint64_t define(const Key& key) { return map_[key] = next_++; }
  // The bound index, or a fresh one (and whether it was fresh).
  std::pair<uint64_t, bool> use(const Key& key) {
    auto [it, fresh] = map_.try_emplace(key, next_);
    if (fresh) ++next_;
    return {it->second, fresh};
  }

 private:
  std::unordered_map<Key, uint64_t> map_;
  uint64_t next_ = 0;
};

class Encoder {
 public:
  Encoder(Sink& sink, StructuralOptions opts) : out_(sink), opts_(opts) {}

  // Entry points: each on a fresh Encoder.
  void encode(const PrimExpr& e) { expr(e); }
  void encode(const PrimFunc& f) { primFunc(f); }
  void encode(const GraphFunc& f) { graphFunc(f); }
  void encode(const Module& m) {
    put(kModule);
    put(m.weight_files.size());
    for (const auto& w : m.weight_files) str(w);
    put(m.functions.size());
    for (const auto& f : m.functions) {
      put(f.index());
      str(functionName(f));  // callees name functions, so names take part here
      // Each function has its own numbering (its name was written above).
      std::visit([this](const auto& fn) { Encoder(out_, opts_).encode(fn); }, f);
    }
    // After the functions, and only when there are any: the hashes of
    // modules without extern declarations stay as they were.
    for (const auto& e : m.externs) str(printExternFunc(e));
  }

 private:
  void expr(const PrimExpr& e) {
    if (!e) return put(kNull);
    if (const auto* v = e->as<VarNode>()) return varUse(v);
    put(kExpr);
    put(static_cast<uint64_t>(e->kind));
    put(static_cast<uint64_t>(e->dtype));
    switch (e->kind) {
      case ExprKind::IntImm: put(static_cast<uint64_t>(e->as<IntImmNode>()->value)); break;
      case ExprKind::FloatImm: put(std::bit_cast<uint64_t>(e->as<FloatImmNode>()->value)); break;
      case ExprKind::Var: break;  // handled above
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        put(static_cast<uint64_t>(b->op));
        expr(b->a);
        expr(b->b);
        break;
      }
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        put(static_cast<uint64_t>(u->op));
        expr(u->a);
        break;
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        expr(s->cond);
        expr(s->true_value);
        expr(s->false_value);
        break;
      }
      case ExprKind::Cast: expr(e->as<CastNode>()->value); break;
      case ExprKind::Load: {
        const auto* l = e->as<LoadNode>();
        bufferUse(l->buffer);
        exprs(l->indices);
        break;
      }
      case ExprKind::Call: {
        const auto* c = e->as<CallNode>();
        str(c->name);
        exprs(c->args);
        break;
      }
    }
  }

  void put(uint64_t word) { out_.put(word); }
  void flag(bool b) { put(b ? 1 : 0); }

  void str(std::string_view s) { bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
  // Length, then the bytes packed little-endian into words.
  void bytes(const uint8_t* data, size_t n) {
    put(n);
    for (size_t i = 0; i < n; i += 8) {
      uint64_t w = 0;
      for (size_t j = 0; j < 8 && i + j < n; ++j) w |= uint64_t{data[i + j]} << (8 * j);
      put(w);
    }
  }

  void exprs(const std::vector<PrimExpr>& es) {
    put(es.size());
    for (const auto& e : es) expr(e);
  }

  // ---- variables ------------------------------------------------------------
  void varDef(const Var& v) {
    put(kVarDef);
    put(vars_.define(v.get()));
    put(static_cast<uint64_t>(v->dtype));
  }
  void varUse(const VarNode* v) {
    put(kVarUse);
    put(vars_.use(v).first);
    put(static_cast<uint64_t>(v->dtype));
  }

  void bufferDef(const Buffer& b) {
    put(kBufferDef);
    put(buffers_.define(b.get()));
    bufferDecl(b);
  }
  void bufferUse(const Buffer& b) {
    put(kBufferUse);
    auto [index, fresh] = buffers_.use(b.get());
    put(index);
    if (fresh) bufferDecl(b);  // a free buffer: its declaration at first use
  }
  void bufferDecl(const Buffer& b) {
    put(static_cast<uint64_t>(b->dtype));
    exprs(b->shape);
    put(static_cast<uint64_t>(b->scope));
  }

  void graphVarDef(const GraphVar& v) {
    put(kGraphVarDef);
    put(graph_vars_.define(v.get()));
    type(v->type);
  }
  void graphVarUse(const GraphVar& v) {
    put(kGraphVarUse);
    auto [index, fresh] = graph_vars_.use(v.get());
    put(index);
    if (fresh) type(v->type);
  }
  void graphVarUses(const std::vector<GraphVar>& vs) {
    put(vs.size());
    for (const auto& v : vs) graphVarUse(v);
  }

  void traceDef(const std::string& name) {
    put(kTraceDef);
    put(trace_refs_.define(name));
  }
  void traceUse(const TraceRef& r) {
    put(kTraceUse);
    put(trace_refs_.use(r.name).first);
  }

  // ---- attributes and types ---------------------------------------------------
  void attrValue(const AttrValue& a) {
    put(kAttr);
    put(a.v.index());
    std::visit(
        [this](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>)
            flag(x);
          else if constexpr (std::is_same_v<T, int64_t>)
            put(static_cast<uint64_t>(x));
          else if constexpr (std::is_same_v<T, double>)
            put(std::bit_cast<uint64_t>(x));
          else if constexpr (std::is_same_v<T, std::string>)
            str(x);
          else if constexpr (std::is_same_v<T, PrimExpr>)
            expr(x);
          else if constexpr (std::is_same_v<T, TraceRef>)
            traceUse(x);
          else
            attrValues(x);
        },
        a.v);
  }
  void attrValues(const std::vector<AttrValue>& values) {
    put(values.size());
    for (const auto& v : values) attrValue(v);
  }
  void attrs(const Attrs& as) {
    put(as.size());
    for (const auto& [key, value] : as) {
      str(key);
      attrValue(value);
    }
  }

  void type(const Type& t) {
    if (t.isTensor()) {
      put(kTensorType);
      put(static_cast<uint64_t>(t.dtype));
      exprs(t.shape);
    } else {
      put(kTupleType);
      put(t.fields.size());
      for (const auto& f : t.fields) type(f);
    }
  }

  // ---- TensorIR ---------------------------------------------------------------
  void region(const BufferRegion& r) {
    bufferUse(r.buffer);
    put(r.region.size());
    for (const auto& range : r.region) {
      expr(range.min);
      expr(range.extent);
    }
  }
  void regions(const std::vector<BufferRegion>& rs) {
    put(rs.size());
    for (const auto& r : rs) region(r);
  }
  void bufferDefs(const std::vector<Buffer>& bs) {
    put(bs.size());
    for (const auto& b : bs) bufferDef(b);
  }

  void stmt(const Stmt& s) {
    if (!s) return put(kNull);
    put(kStmt);
    put(static_cast<uint64_t>(s->kind));
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        expr(f->extent);  // in the enclosing scope
        varDef(f->loop_var);
        put(static_cast<uint64_t>(f->loop_kind));
        str(f->thread_tag);
        attrs(f->attrs);
        stmt(f->body);
        break;
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        str(b->name);
        put(b->iter_vars.size());
        for (const auto& iv : b->iter_vars) {  // domains and bindings: the enclosing scope
          put(static_cast<uint64_t>(iv.kind));
          expr(iv.extent);
          expr(iv.binding);
        }
        for (const auto& iv : b->iter_vars) varDef(iv.var);
        bufferDefs(b->alloc_buffers);
        expr(b->predicate);
        regions(b->reads);
        regions(b->writes);
        attrs(b->attrs);
        stmt(b->init);
        stmt(b->body);
        break;
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        bufferUse(st->buffer);
        exprs(st->indices);
        expr(st->value);
        break;
      }
      case StmtKind::Seq: {
        const auto& stmts = s->as<SeqNode>()->stmts;
        put(stmts.size());
        for (const auto& x : stmts) stmt(x);
        break;
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        expr(i->cond);
        stmt(i->then_case);
        stmt(i->else_case);
        break;
      }
    }
  }

  void trace(const Trace& t) {
    put(kTrace);
    put(t.insts.size());
    for (const auto& inst : t.insts) {
      put(kInst);
      str(inst.name);
      attrValues(inst.inputs);
      attrs(inst.attrs);
      put(inst.outputs.size());
      for (const auto& o : inst.outputs) traceDef(o);
      flag(inst.decision.has_value());
      if (inst.decision) attrValue(*inst.decision);
    }
  }

  void primFunc(const PrimFunc& f) {
    put(kPrimFunc);
    bufferDefs(f.params);  // their shapes bind the symbolic variables
    bufferDefs(f.allocs);
    attrs(f.attrs);
    if (opts_.compare_traces) trace(f.trace);
    stmt(f.body);
  }

  // ---- graph level --------------------------------------------------------------
  void value(const GraphValue& v) {
    put(kValue);
    put(static_cast<uint64_t>(v.kind));
    switch (v.kind) {
      case ValueKind::Alias:
      case ValueKind::Tuple: graphVarUses(v.args); break;
      case ValueKind::TupleGet:
        graphVarUses(v.args);
        put(static_cast<uint64_t>(v.index));
        break;
      case ValueKind::Const:
        flag(v.is_inline);
        if (v.is_inline)
          bytes(v.data.data(), v.data.size());
        else
          str(v.weight);
        break;
      case ValueKind::Op:
      case ValueKind::CallTir:
      case ValueKind::CallExtern:
      case ValueKind::CallGraph:
        str(v.callee);
        graphVarUses(v.args);
        attrs(v.attrs);
        break;
    }
  }

  void graphFunc(const GraphFunc& f) {
    put(kGraphFunc);
    put(f.params.size());
    for (const auto& p : f.params) graphVarDef(p);
    type(f.ret_type);
    attrs(f.attrs);
    // Bindings outside dataflow blocks are one plain block per run: empty
    // plain blocks and the boundaries between adjacent ones mean nothing
    // (the text cannot express them either), so the walk sees the
    // normalized sequence. Already normalized functions encode as before.
    std::vector<std::pair<bool, std::vector<const Binding*>>> blocks;
    for (const auto& block : f.blocks) {
      if (!block.dataflow && block.bindings.empty()) continue;
      if (block.dataflow || blocks.empty() || blocks.back().first)
        blocks.emplace_back(block.dataflow, std::vector<const Binding*>{});
      for (const auto& b : block.bindings) blocks.back().second.push_back(&b);
    }
    put(blocks.size());
    for (const auto& [dataflow, bindings] : blocks) {
      flag(dataflow);
      put(bindings.size());
      for (const Binding* b : bindings) {
        value(b->value);  // before the definition: the value is in the outer scope
        graphVarDef(b->var);
      }
    }
    flag(f.ret_is_tuple);
    graphVarUses(f.ret);
  }

  Sink& out_;
  StructuralOptions opts_;
  Numbering<const VarNode*> vars_;
  Numbering<const BufferNode*> buffers_;
  Numbering<const GraphVarNode*> graph_vars_;
  Numbering<std::string> trace_refs_;
};

template <class T>
bool equalBy(const T& a, const T& b, StructuralOptions opts) {
  RecordSink first;
  Encoder(first, opts).encode(a);
  CompareSink second(first.words);
  Encoder(second, opts).encode(b);
  return second.equal();
}

template <class T>
uint64_t hashBy(const T& x, StructuralOptions opts) {
  HashSink sink;
  Encoder(sink, opts).encode(x);
  return sink.finish();
}

}  // namespace

bool structuralEqual(const Module& a, const Module& b, StructuralOptions opts) { return equalBy(a, b, opts); }
bool structuralEqual(const PrimFunc& a, const PrimFunc& b, StructuralOptions opts) {
  return equalBy(a, b, opts);
}
bool structuralEqual(const GraphFunc& a, const GraphFunc& b, StructuralOptions opts) {
  return equalBy(a, b, opts);
}
bool structuralEqual(const PrimExpr& a, const PrimExpr& b) { return equalBy(a, b, {}); }

uint64_t structuralHash(const Module& m, StructuralOptions opts) { return hashBy(m, opts); }
uint64_t structuralHash(const PrimFunc& f, StructuralOptions opts) { return hashBy(f, opts); }
uint64_t structuralHash(const GraphFunc& f, StructuralOptions opts) { return hashBy(f, opts); }
uint64_t structuralHash(const PrimExpr& e) { return hashBy(e, {}); }

}  // namespace mlcc::ir
