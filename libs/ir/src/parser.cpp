// The IR text parser (see parser.h; syntax: artifacts_schema/ir-grammar.md).
//
// A recursive-descent parser over the token stream of lexer.h, building IR
// nodes with the factories of expr.h/stmt.h. Scoping: graph variables are
// function-scoped SSA; loop and block iteration variables live in their
// loop/block; buffers are declared by parameters, function-level and
// block-level alloc_buffer; symbolic shape variables are bound by their
// first whole-dimension appearance in the parameters. Every error is an
// mlcc::Error at the offending token; recursion is bounded.
#include "mlcc/ir/parser.h"

#include <cstring>
#include <limits>
#include <unordered_set>
#include <variant>

#include "lexer.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/support/file_io.h"
#include "names.h"

namespace mlcc::ir {

namespace {

using detail::localName;
using detail::Tok;
using detail::Token;

constexpr int kMaxNesting = 256;           // parentheses, unary operators, lists, tuples, statements
constexpr int kMaxOperatorsInExpr = 2000;  // bounds the height of left-associative chains
constexpr uint64_t kMaxInlineElements = uint64_t{1} << 32;

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool isFloatKeyword(std::string_view word) {
  for (std::string_view base : {"inf", "nan"}) {
    if (word.substr(0, 3) != base) continue;
    std::string_view suffix = word.substr(3);
    if (suffix.empty() || suffix == "f32" || suffix == "f16" || suffix == "bf16" || suffix == "f64")
      return true;
  }
  return false;
}

std::optional<BinaryOp> binaryOpOf(Tok k) {
  switch (k) {
    case Tok::OrOr: return BinaryOp::Or;
    case Tok::AndAnd: return BinaryOp::And;
    case Tok::Eq: return BinaryOp::EQ;
    case Tok::Ne: return BinaryOp::NE;
    case Tok::Lt: return BinaryOp::LT;
    case Tok::Le: return BinaryOp::LE;
    case Tok::Gt: return BinaryOp::GT;
    case Tok::Ge: return BinaryOp::GE;
    case Tok::Plus: return BinaryOp::Add;
    case Tok::Minus: return BinaryOp::Sub;
    case Tok::Star: return BinaryOp::Mul;
    case Tok::Slash: return BinaryOp::Div;
    case Tok::Percent: return BinaryOp::Mod;
    default: return std::nullopt;
  }
}

int levelOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return 1;
    case BinaryOp::And: return 2;
    case BinaryOp::Add:
    case BinaryOp::Sub: return 4;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return 5;
    default: return 3;  // comparisons
  }
}

void appendLE(std::vector<uint8_t>& out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& file, SourceMap* map)
      : text_(text), file_(file), lex_(text, file_), map_(map) {}

  Module module();
  PrimExpr standaloneExpr();
  ScheduleScript scheduleScript();

 private:
  using Local = std::variant<Var, Buffer, GraphVar>;

  // ---- tokens and errors ----
  const Token& peek(size_t k = 0) { return lex_.peek(k); }
  Token next() { return lex_.next(); }
  bool check(Tok k, size_t ahead = 0) { return peek(ahead).kind == k; }
  bool checkWord(std::string_view word, size_t ahead = 0) {
    const Token& t = peek(ahead);
    return t.kind == Tok::Ident && t.text == word;
  }
  bool accept(Tok k) {
    if (!check(k)) return false;
    next();
    return true;
  }
  [[noreturn]] void failAt(const Token& t, const std::string& message) {
    throw detail::errorAtPos(file_, text_, t.line, t.col, message);
  }
  Token expect(Tok k, const std::string& what) {
    if (!check(k)) failAt(peek(), "expected " + what + ", found " + detail::describeToken(peek()));
    return next();
  }
  Token expectWord(std::string_view word, const std::string& what) {
    if (!checkWord(word)) failAt(peek(), "expected " + what + ", found " + detail::describeToken(peek()));
    return next();
  }
  // Runs a factory; its location-less errors are reported at `t`.
  template <class F>
  auto at(const Token& t, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const mlcc::Error& e) {
      if (e.loc().line > 0) throw;
      failAt(t, e.message());
    }
  }
  bool adjacent(const Token& a, const Token& b) const { return a.end == b.offset; }

  struct DepthGuard {
    DepthGuard(Parser& p, const Token& t) : parser(p) {
      if (++parser.depth_ > kMaxNesting)
        parser.failAt(t, "nesting too deep (more than " + std::to_string(kMaxNesting) + " levels)");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  void note(const void* node, const Token& t) {
    if (map_ && node) map_->locs[node] = SourceLoc{file_, t.line, t.col};
  }

  // ---- scopes ----
  void beginFunction() {
    locals_.clear();
    scopes_.clear();
    symbolic_.clear();
    unbound_symbols_.clear();
    pushScope();
  }
  void pushScope() { scopes_.emplace_back(); }
  void popScope() {
    for (const auto& name : scopes_.back()) locals_.erase(name);
    scopes_.pop_back();
  }
  void define(const Token& t, Local value) {
    if (locals_.count(t.value)) failAt(t, "redefinition of " + localName(t.value));
    locals_.emplace(t.value, std::move(value));
    scopes_.back().push_back(t.value);
  }
  const Local* findLocal(const std::string& name) const {
    auto it = locals_.find(name);
    return it == locals_.end() ? nullptr : &it->second;
  }
  GraphVar graphVarRef(const Token& t);
  Buffer bufferRef(const Token& t);
  Var symbolicRef(const Token& t);

  // ---- literals and expressions ----
  bool numericAhead(size_t k) {
    const Token& t = peek(k);
    return t.kind == Tok::Int || t.kind == Tok::Float || (t.kind == Tok::Ident && isFloatKeyword(t.text));
  }
  bool negativeLiteralAhead() { return check(Tok::Minus) && numericAhead(1) && adjacent(peek(0), peek(1)); }
  int64_t intValue(const Token& t, bool negative, DType dtype, const Token& where);
  DType intSuffix(const Token& t);
  DType floatSuffix(const Token& t, std::string_view suffix);
  double floatValue(const Token& t, bool negative, DType dtype, const Token& where);
  PrimExpr numericLiteral();  // at an optional adjacent '-' and a number
  PrimExpr expression();
  PrimExpr binaryExpr(int min_level);
  PrimExpr unaryExpr();
  PrimExpr primary();
  std::vector<PrimExpr> exprList(Tok close, const std::string& what);
  PrimExpr identExpr();
  void checkIndexCount(const Token& t, const Buffer& b, size_t n, const char* what);

  // ---- types and attributes ----
  Type type(bool bind_symbols);
  std::vector<PrimExpr> shape(bool bind_symbols);
  void requireBoundSymbols();
  DType dtypeWord(const Token& t);
  AttrValue attrValue();
  bool kwargAhead();  // IDENT ('.' IDENT)* '='
  void kwarg(Attrs& attrs);
  Attrs attrsClause();

  // ---- graph functions ----
  std::vector<GraphVar> graphParams();
  ExternFunc externFunc();
  GraphFunc graphFunc();
  Binding binding();
  GraphValue value(const Type& t);
  void graphArgs(GraphValue& v, const std::string& callee);
  std::vector<uint8_t> inlineData(const Type& t);
  void inlineElement(DType t, std::vector<uint8_t>& out);

  // ---- prim funcs ----
  PrimFunc primFunc();
  Buffer bufferDecl(bool bind_symbols);
  Stmt stmt();
  Stmt stmtBlock(const std::string& what);  // '{' stmt* '}'
  Stmt forStmt();
  Stmt blockStmt();
  Stmt ifStmt();
  Stmt storeStmt();
  std::vector<BufferRegion> regions(const char* what);
  Trace trace();
  // The instructions up to and including the closing '}' (with each one's location).
  Trace traceBody(std::vector<SourceLoc>* locs);

  const std::string& text_;
  const std::string file_;
  detail::Lexer lex_;
  SourceMap* map_;
  int depth_ = 0;
  int operators_ = 0;     // binary operators in the current top-level expression
  int expr_nesting_ = 0;  // expression() calls in progress
  std::unordered_map<std::string, Local> locals_;
  std::vector<std::vector<std::string>> scopes_;
  std::unordered_map<std::string, Var> symbolic_;
  bool create_free_vars_ = false;  // parseExpr: free names become variables
  // A parameter's shape expression may use a symbolic variable that a later
  // parameter binds as a whole dimension (`f32[batch * 17, 32]` ahead of
  // `f32[batch, 17, 32]`): such names are created where first used, and
  // must be bound by the end of the parameters (requireBoundSymbols).
  bool in_signature_shape_ = false;
  std::vector<std::pair<std::string, Token>> unbound_symbols_;  // created, not yet a whole dimension
  std::unordered_set<std::string>* trace_refs_ = nullptr;       // inside trace {}: the defined names
  // Inside a trace instruction: identifiers name fresh variables (the index
  // variables of transform_layout), one per name and instruction.
  std::unordered_map<std::string, Var>* trace_vars_ = nullptr;
};

// ---------------------------------------------------------------- names

GraphVar Parser::graphVarRef(const Token& t) {
  const Local* l = findLocal(t.value);
  if (!l || !std::holds_alternative<GraphVar>(*l)) failAt(t, "undefined variable " + localName(t.value));
  return std::get<GraphVar>(*l);
}

Buffer Parser::bufferRef(const Token& t) {
  const Local* l = findLocal(t.value);
  if (!l) failAt(t, "undefined buffer " + localName(t.value));
  if (!std::holds_alternative<Buffer>(*l)) failAt(t, localName(t.value) + " is not a buffer");
  return std::get<Buffer>(*l);
}

Var Parser::symbolicRef(const Token& t) {
  const std::string name = t.kind == Tok::Ident ? std::string(t.text) : t.value;
  if (trace_vars_) {  // instruction-local, even where a symbolic dimension has the name
    auto [it, fresh] = trace_vars_->try_emplace(name);
    if (fresh) it->second = makeVar(name);
    return it->second;
  }
  if (auto it = symbolic_.find(name); it != symbolic_.end()) return it->second;
  if (!create_free_vars_ && !in_signature_shape_) failAt(t, "undefined symbolic variable '" + name + "'");
  Var v = makeVar(name);
  symbolic_.emplace(name, v);
  if (in_signature_shape_) unbound_symbols_.emplace_back(name, t);
  return v;
}

void Parser::requireBoundSymbols() {
  if (unbound_symbols_.empty()) return;
  const auto& [name, t] = unbound_symbols_.front();
  failAt(t, "undefined symbolic variable '" + name +
                "': no parameter has it as a whole dimension of its shape, which defines it");
}

// ---------------------------------------------------------------- literals

DType Parser::intSuffix(const Token& t) {
  if (t.suffix.empty()) return DType::i64;
  auto d = parseDType(t.suffix);
  if (!d) failAt(t, "unknown dtype suffix '" + std::string(t.suffix) + "'");
  if (!isInt(*d))
    failAt(t, "integer literal with dtype suffix '" + std::string(t.suffix) + "' (write " +
                  std::string(t.text) + ".0" + std::string(t.suffix) + ")");
  return *d;
}

DType Parser::floatSuffix(const Token& t, std::string_view suffix) {
  if (suffix.empty()) return DType::f32;
  auto d = parseDType(suffix);
  if (!d) failAt(t, "unknown dtype suffix '" + std::string(suffix) + "'");
  if (!isFloat(*d)) failAt(t, "float literal with non-float dtype suffix '" + std::string(suffix) + "'");
  return *d;
}

int64_t Parser::intValue(const Token& t, bool negative, DType dtype, const Token& where) {
  // The largest magnitude of the dtype's range on this side of zero.
  const uint64_t limit =
      negative ? uint64_t{0} - static_cast<uint64_t>(intMin(dtype)) : static_cast<uint64_t>(intMax(dtype));
  uint64_t magnitude = 0;
  for (char c : t.text) {
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (digit > limit || magnitude > (limit - digit) / 10) {
      std::string range = dtype == DType::i64 ? "" : " for " + std::string(dtypeName(dtype));
      failAt(where, "integer literal out of range" + range);
    }
    magnitude = magnitude * 10 + digit;
  }
  return negative ? static_cast<int64_t>(uint64_t{0} - magnitude) : static_cast<int64_t>(magnitude);
}

double Parser::floatValue(const Token& t, bool negative, DType dtype, const Token& where) {
  double v;
  if (t.kind == Tok::Ident) {
    v = t.text.substr(0, 3) == "inf" ? std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::quiet_NaN();
  } else {
    auto parsed = detail::parseFloatText(t.text, dtype);
    if (!parsed) failAt(where, "float literal out of range for " + std::string(dtypeName(dtype)));
    v = *parsed;
  }
  return negative ? -v : v;
}

PrimExpr Parser::numericLiteral() {
  const bool negative = check(Tok::Minus);
  const Token start = peek();
  if (negative) next();
  const Token t = next();
  if (t.kind == Tok::Int) {
    DType d = intSuffix(t);
    int64_t v = intValue(t, negative, d, start);
    return makeInt(v, d);
  }
  std::string_view suffix = t.kind == Tok::Ident ? t.text.substr(3) : t.suffix;
  DType d = floatSuffix(t, suffix);
  return makeFloat(floatValue(t, negative, d, start), d);
}

// ---------------------------------------------------------------- expressions

PrimExpr Parser::expression() {
  DepthGuard guard(*this, peek());
  if (expr_nesting_++ == 0) operators_ = 0;
  struct Leave {
    int& nesting;
    ~Leave() { --nesting; }
  } leave{expr_nesting_};
  return binaryExpr(1);
}

PrimExpr Parser::binaryExpr(int min_level) {
  PrimExpr lhs = unaryExpr();
  while (true) {
    auto op = binaryOpOf(peek().kind);
    if (!op || levelOf(*op) < min_level) return lhs;
    const Token t = next();
    if (++operators_ > kMaxOperatorsInExpr)
      failAt(t, "expression too long (more than " + std::to_string(kMaxOperatorsInExpr) + " operators)");
    PrimExpr rhs = binaryExpr(levelOf(*op) + 1);
    lhs = at(t, [&] { return makeBinary(*op, lhs, rhs); });
  }
}

PrimExpr Parser::unaryExpr() {
  if (negativeLiteralAhead()) return numericLiteral();
  if (check(Tok::Minus) || check(Tok::Bang)) {
    const Token t = next();
    DepthGuard guard(*this, t);
    PrimExpr a = unaryExpr();
    return at(t, [&] { return makeUnary(t.kind == Tok::Minus ? UnaryOp::Neg : UnaryOp::Not, a); });
  }
  return primary();
}

void Parser::checkIndexCount(const Token& t, const Buffer& b, size_t n, const char* what) {
  if (n == b->shape.size()) return;
  failAt(t, "buffer " + localName(t.value) + " has " + plural(b->shape.size(), "dimension", "dimensions") +
                " but " + std::to_string(n) + " " + what + (n == 1 ? " is given" : " are given"));
}

std::vector<PrimExpr> Parser::exprList(Tok close, const std::string& what) {
  std::vector<PrimExpr> out;
  if (!check(close)) {
    do out.push_back(expression());
    while (accept(Tok::Comma));
  }
  expect(close, what);
  return out;
}

PrimExpr Parser::primary() {
  const Token& t = peek();
  switch (t.kind) {
    case Tok::Int:
    case Tok::Float: return numericLiteral();
    case Tok::LParen: {
      next();
      PrimExpr e = expression();
      expect(Tok::RParen, "')'");
      return e;
    }
    case Tok::Local: {
      const Token name = next();
      if (check(Tok::LBracket)) {
        Buffer b = create_free_vars_ ? nullptr : bufferRef(name);
        if (!b) failAt(name, "undefined buffer " + localName(name.value));
        next();
        auto idx = exprList(Tok::RBracket, "']' after the indices of " + localName(name.value));
        checkIndexCount(name, b, idx.size(), idx.size() == 1 ? "index" : "indices");
        return at(name, [&] { return makeLoad(b, std::move(idx)); });
      }
      if (create_free_vars_) return symbolicRef(name);
      const Local* l = findLocal(name.value);
      if (!l) failAt(name, "undefined variable " + localName(name.value));
      if (std::holds_alternative<Buffer>(*l))
        failAt(name, "buffer " + localName(name.value) +
                         " used as a value (index it: " + localName(name.value) + "[...])");
      if (std::holds_alternative<GraphVar>(*l))
        failAt(name, "graph variable " + localName(name.value) + " cannot be used in an expression");
      return std::get<Var>(*l);
    }
    case Tok::Dollar: return symbolicRef(next());
    case Tok::Ident: return identExpr();
    default: failAt(t, "expected an expression, found " + detail::describeToken(t));
  }
}

PrimExpr Parser::identExpr() {
  const Token t = peek();
  const std::string_view w = t.text;
  if (w == "true" || w == "false") {
    next();
    return makeBool(w == "true");
  }
  if (isFloatKeyword(w)) return numericLiteral();
  if (w == "cast") {
    next();
    expect(Tok::Lt, "'<' after 'cast'");
    DType d = dtypeWord(expect(Tok::Ident, "a dtype after 'cast<'"));
    expect(Tok::Gt, "'>' after the dtype of 'cast'");
    expect(Tok::LParen, "'(' after 'cast<" + std::string(dtypeName(d)) + ">'");
    PrimExpr v = expression();
    expect(Tok::RParen, "')' after the argument of 'cast'");
    return makeCast(d, v);
  }
  if (check(Tok::LParen, 1)) {
    next();
    next();
    auto args = exprList(Tok::RParen, "')' after arguments of '" + std::string(w) + "'");
    auto arity = [&](size_t n) {
      if (args.size() != n)
        failAt(t, "'" + std::string(w) + "' takes " + std::to_string(n) + " arguments, not " +
                      std::to_string(args.size()));
    };
    if (w == "min" || w == "max") {
      arity(2);
      return at(t, [&] { return makeBinary(w == "min" ? BinaryOp::Min : BinaryOp::Max, args[0], args[1]); });
    }
    if (w == "select") {
      arity(3);
      return at(t, [&] { return makeSelect(args[0], args[1], args[2]); });
    }
    return at(t, [&] { return makeCall(std::string(w), std::move(args)); });
  }
  if (detail::isReservedWord(w))
    failAt(t, "'" + std::string(w) + "' is a keyword; write $\"" + std::string(w) +
                  "\" for a symbolic variable of that name");
  return symbolicRef(next());
}

// ---------------------------------------------------------------- types and attributes

DType Parser::dtypeWord(const Token& t) {
  auto d = parseDType(t.text);
  if (!d) failAt(t, "unknown dtype '" + std::string(t.text) + "'");
  return *d;
}

std::vector<PrimExpr> Parser::shape(bool bind_symbols) {
  expect(Tok::LBracket, "'[' and the shape after the dtype");
  std::vector<PrimExpr> dims;
  if (!check(Tok::RBracket)) {
    do {
      const Token t = peek();
      const bool lone_name =
          (t.kind == Tok::Dollar || (t.kind == Tok::Ident && !detail::isReservedWord(t.text))) &&
          (check(Tok::Comma, 1) || check(Tok::RBracket, 1));
      const std::string name = t.kind == Tok::Ident ? std::string(t.text) : t.value;
      if (bind_symbols && lone_name && !symbolic_.count(name)) {
        next();
        Var v = makeVar(name);
        symbolic_.emplace(name, v);
        note(v.get(), t);
        dims.push_back(v);
        continue;
      }
      if (bind_symbols && lone_name)  // binds a name an earlier parameter's expression used
        std::erase_if(unbound_symbols_, [&](const auto& u) { return u.first == name; });
      in_signature_shape_ = bind_symbols;
      PrimExpr d = expression();
      in_signature_shape_ = false;
      if (d->dtype != DType::i64)
        failAt(t, "shape dimension must be an i64 expression, not " + std::string(dtypeName(d->dtype)));
      dims.push_back(d);
    } while (accept(Tok::Comma));
  }
  expect(Tok::RBracket, "']' after the shape");
  return dims;
}

Type Parser::type(bool bind_symbols) {
  const Token t = peek();
  DepthGuard guard(*this, t);
  if (accept(Tok::LParen)) {
    std::vector<Type> fields;
    if (!check(Tok::RParen)) {
      do fields.push_back(type(bind_symbols));
      while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "')' after the fields of a tuple type");
    return Type::tuple(std::move(fields));
  }
  if (t.kind != Tok::Ident) failAt(t, "expected a type, found " + detail::describeToken(t));
  DType d = dtypeWord(next());
  return Type::tensor(d, shape(bind_symbols));
}

AttrValue Parser::attrValue() {
  const Token t = peek();
  DepthGuard guard(*this, t);
  if (accept(Tok::LBracket)) {
    AttrValue::List items;
    if (!check(Tok::RBracket)) {
      do items.push_back(attrValue());
      while (accept(Tok::Comma));
    }
    expect(Tok::RBracket, "']' after the list items");
    return AttrValue(std::move(items));
  }
  if (t.kind == Tok::String) return AttrValue(next().value);
  auto continues = [&](size_t k) { return binaryOpOf(peek(k).kind).has_value() || check(Tok::PlusColon, k); };
  if (t.kind == Tok::Local && !continues(1) && !check(Tok::LBracket, 1)) {
    next();
    if (trace_refs_ && !trace_refs_->count(t.value))
      failAt(t, "undefined trace variable " + localName(t.value));
    return AttrValue(TraceRef{t.value});
  }
  // A lone literal without a suffix is a plain attribute; anything else is an expression.
  const size_t k = negativeLiteralAhead() ? 1 : 0;
  const Token& lit = peek(k);
  const bool plain_number = (lit.kind == Tok::Int || lit.kind == Tok::Float) && lit.suffix.empty();
  const bool plain_word = lit.kind == Tok::Ident && (lit.text == "inf" || lit.text == "nan");
  const bool plain_bool = k == 0 && lit.kind == Tok::Ident && (lit.text == "true" || lit.text == "false");
  if ((plain_number || plain_word || plain_bool) && !continues(k + 1)) {
    const bool negative = k == 1;
    if (negative) next();
    const Token v = next();
    if (plain_bool) return AttrValue(v.text == "true");
    if (v.kind == Tok::Int) return AttrValue(intValue(v, negative, DType::i64, t));
    return AttrValue(floatValue(v, negative, DType::i64, t));
  }
  return AttrValue(expression());
}

bool Parser::kwargAhead() {
  size_t k = 0;
  if (!check(Tok::Ident, k)) return false;
  while (check(Tok::Dot, k + 1) && check(Tok::Ident, k + 2)) k += 2;
  return check(Tok::Assign, k + 1);
}

void Parser::kwarg(Attrs& attrs) {
  const Token key = expect(Tok::Ident, "an attribute name");
  std::string name(key.text);
  // Dotted keys (`tir.noalias`): identifiers joined by '.' without spaces.
  while (check(Tok::Dot) && adjacent(peek(0), peek(1)) && check(Tok::Ident, 1)) {
    next();
    name += "." + std::string(next().text);
  }
  expect(Tok::Assign, "'=' after attribute '" + name + "'");
  AttrValue v = attrValue();
  if (!attrs.emplace(name, std::move(v)).second) failAt(key, "duplicate attribute '" + name + "'");
}

Attrs Parser::attrsClause() {
  Attrs attrs;
  if (!checkWord("attrs")) return attrs;
  next();
  expect(Tok::LParen, "'(' after 'attrs'");
  if (!check(Tok::RParen)) {
    do kwarg(attrs);
    while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "')' after the attributes");
  return attrs;
}

// ---------------------------------------------------------------- graph functions

// `%p: type, ...` up to the closing parenthesis, each defined in the
// function's scope (their types bind the symbolic dimensions).
std::vector<GraphVar> Parser::graphParams() {
  std::vector<GraphVar> params;
  if (check(Tok::RParen)) return params;
  do {
    const Token p = expect(Tok::Local, "a parameter (%name: type)");
    expect(Tok::Colon, "':' and the type of " + localName(p.value));
    GraphVar v = makeGraphVar(p.value, type(true));
    define(p, v);
    note(v.get(), p);
    params.push_back(v);
  } while (accept(Tok::Comma));
  requireBoundSymbols();
  return params;
}

// extern "NAME"(%p: type, ...) -> type attrs(library = "FILE", symbol = "C_NAME")
ExternFunc Parser::externFunc() {
  next();  // extern
  ExternFunc f;
  const Token name = expect(Tok::String, "the quoted name call_extern uses after 'extern'");
  f.name = name.value;
  beginFunction();
  expect(Tok::LParen, "'(' after the name of extern \"" + f.name + "\"");
  f.params = graphParams();
  expect(Tok::RParen, "')' after the parameters of extern \"" + f.name + "\"");
  expect(Tok::Arrow, "'->' and the result type");
  f.ret_type = type(false);
  const Token attrs_at = peek();
  Attrs attrs = attrsClause();
  for (const auto& [key, value] : attrs) {
    if (key != "library" && key != "symbol" && key != "kind")
      failAt(attrs_at,
             "unknown attribute '" + key + "' of extern \"" + f.name + "\" (expected library, symbol, kind)");
    if (!value.isString())
      failAt(attrs_at, "attribute '" + key + "' of extern \"" + f.name + "\" is a string");
    if (key == "kind") {
      if (value.asString() != "tensor_intrin")
        failAt(attrs_at, "kind of extern \"" + f.name + "\" is \"" + value.asString() +
                             "\"; the only kind is \"tensor_intrin\" (a plain extern has none)");
      f.tensor_intrin = true;
      continue;
    }
    (key == "library" ? f.library : f.symbol) = value.asString();
  }
  if (f.library.empty() || f.symbol.empty())
    failAt(attrs_at, "extern \"" + f.name + "\" needs attrs(library = \"FILE\", symbol = \"C_NAME\")");
  return f;
}

GraphFunc Parser::graphFunc() {
  next();  // graph
  const Token name = expect(Tok::Global, "a function name (@name) after 'graph'");
  GraphFunc f;
  f.name = name.value;
  beginFunction();
  expect(Tok::LParen, "'(' after the function name");
  f.params = graphParams();
  expect(Tok::RParen, "')' after the parameters of " + detail::globalName(f.name));
  expect(Tok::Arrow, "'->' and the return type");
  f.ret_type = type(false);
  f.attrs = attrsClause();
  expect(Tok::LBrace, "'{' to open the body of " + detail::globalName(f.name));
  while (!checkWord("return")) {
    if (checkWord("dataflow")) {
      next();
      expect(Tok::LBrace, "'{' after 'dataflow'");
      BindingBlock block{true, {}};
      while (!check(Tok::RBrace)) {
        if (!check(Tok::Local))
          failAt(peek(),
                 "expected a binding or '}' in a dataflow block, found " + detail::describeToken(peek()));
        block.bindings.push_back(binding());
      }
      next();
      f.blocks.push_back(std::move(block));
    } else if (check(Tok::Local)) {
      if (f.blocks.empty() || f.blocks.back().dataflow) f.blocks.push_back(BindingBlock{false, {}});
      f.blocks.back().bindings.push_back(binding());
    } else {
      failAt(peek(), "expected a binding, 'dataflow' or 'return', found " + detail::describeToken(peek()));
    }
  }
  next();  // return
  if (accept(Tok::LParen)) {
    f.ret_is_tuple = true;
    if (!check(Tok::RParen)) {
      do f.ret.push_back(graphVarRef(expect(Tok::Local, "a returned variable")));
      while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "')' after the returned variables");
  } else {
    f.ret.push_back(graphVarRef(expect(Tok::Local, "a returned variable or '(' after 'return'")));
  }
  expect(Tok::RBrace, "'}' at the end of " + detail::globalName(f.name));
  return f;
}

Binding Parser::binding() {
  const Token name = next();
  expect(Tok::Colon, "':' and the type of " + localName(name.value));
  Type t = type(false);
  expect(Tok::Assign, "'=' after the type of " + localName(name.value));
  Binding b;
  b.value = value(t);
  b.var = makeGraphVar(name.value, std::move(t));
  define(name, b.var);
  note(b.var.get(), name);
  return b;
}

GraphValue Parser::value(const Type& t) {
  GraphValue v;
  const Token tok = peek();
  if (tok.kind == Tok::Local) {
    next();
    v.args.push_back(graphVarRef(tok));
    if (accept(Tok::LBracket)) {
      v.kind = ValueKind::TupleGet;
      const bool negative = accept(Tok::Minus);
      v.index = intValue(expect(Tok::Int, "a tuple index"), negative, DType::i64, tok);
      expect(Tok::RBracket, "']' after the tuple index");
    } else {
      v.kind = ValueKind::Alias;
    }
    return v;
  }
  if (tok.kind == Tok::LParen) {
    next();
    v.kind = ValueKind::Tuple;
    if (!check(Tok::RParen)) {
      do v.args.push_back(graphVarRef(expect(Tok::Local, "a tuple field (%name)")));
      while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "')' after the tuple fields");
    return v;
  }
  if (tok.kind != Tok::Ident)
    failAt(tok, "expected a value (variable, const, tuple, op call, call_tir, call_extern or call), found " +
                    detail::describeToken(tok));
  const std::string_view w = tok.text;
  if (w == "const") {
    next();
    v.kind = ValueKind::Const;
    if (check(Tok::String)) {
      v.weight = next().value;
    } else {
      v.is_inline = true;
      v.data = inlineData(t);
    }
    return v;
  }
  if (w == "call_tir" || w == "call") {
    next();
    v.kind = w == "call" ? ValueKind::CallGraph : ValueKind::CallTir;
    v.callee = expect(Tok::Global, "a function name (@name) after '" + std::string(w) + "'").value;
    graphArgs(v, detail::globalName(v.callee));
    return v;
  }
  if (w == "call_extern") {
    next();
    v.kind = ValueKind::CallExtern;
    v.callee = expect(Tok::String, "a quoted symbol name after 'call_extern'").value;
    graphArgs(v, detail::quoteString(v.callee));
    return v;
  }
  if (!check(Tok::LParen, 1)) failAt(tok, "expected '(' after op name '" + std::string(w) + "'");
  next();
  v.kind = ValueKind::Op;
  v.callee = std::string(w);
  graphArgs(v, "'" + v.callee + "'");
  return v;
}

void Parser::graphArgs(GraphValue& v, const std::string& callee) {
  expect(Tok::LParen, "'(' after " + callee);
  if (!check(Tok::RParen)) {
    do {
      if (kwargAhead()) {
        kwarg(v.attrs);
      } else if (check(Tok::Local)) {
        if (!v.attrs.empty()) failAt(peek(), "positional argument after keyword arguments");
        v.args.push_back(graphVarRef(next()));
      } else {
        failAt(peek(), "expected an argument (%name or key = value), found " + detail::describeToken(peek()));
      }
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "')' after arguments of " + callee);
}

std::vector<uint8_t> Parser::inlineData(const Type& t) {
  const Token start = peek();
  if (!t.isTensor()) failAt(start, "an inline constant needs a tensor type, not a tuple");
  uint64_t count = 1;
  for (const auto& d : t.shape) {
    int64_t n = 0;
    if (!asConstInt(d, &n)) failAt(start, "an inline constant needs a static shape");
    if (n < 0 || (n > 0 && count > kMaxInlineElements / static_cast<uint64_t>(n)))
      failAt(start, "inline constant shape out of range");
    count *= static_cast<uint64_t>(n);
  }
  std::vector<uint8_t> data;
  uint64_t given = 0;
  if (accept(Tok::LBracket)) {
    if (!check(Tok::RBracket)) {
      do {
        inlineElement(t.dtype, data);
        ++given;
      } while (accept(Tok::Comma));
    }
    expect(Tok::RBracket, "']' after the inline data");
  } else {
    inlineElement(t.dtype, data);
    given = 1;
  }
  if (given != count)
    failAt(start, "inline constant has " + plural(given, "element", "elements") + " but its type " +
                      std::string(dtypeName(t.dtype)) + "[...] has " + std::to_string(count));
  return data;
}

void Parser::inlineElement(DType dtype, std::vector<uint8_t>& out) {
  const Token start = peek();
  if (dtype == DType::boolean) {
    if (!checkWord("true") && !checkWord("false"))
      failAt(start, "expected true or false in bool inline data, found " + detail::describeToken(start));
    out.push_back(next().text == "true" ? 1 : 0);
    return;
  }
  const bool negative = negativeLiteralAhead();
  if (negative) next();
  const Token t = peek();
  if (!numericAhead(0)) failAt(t, "expected a number in inline data, found " + detail::describeToken(t));
  if (t.kind != Tok::Ident && !t.suffix.empty()) failAt(t, "inline data takes no dtype suffixes");
  if (t.kind == Tok::Ident && t.text != "inf" && t.text != "nan")
    failAt(t, "inline data takes no dtype suffixes");
  next();
  if (isInt(dtype)) {
    if (t.kind != Tok::Int)
      failAt(t, "expected an integer in " + std::string(dtypeName(dtype)) + " inline data");
    appendLE(out, static_cast<uint64_t>(intValue(t, negative, dtype, start)), dtypeBytes(dtype));
    return;
  }
  double v = floatValue(t, negative, dtype, start);
  if (dtype == DType::f32) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    appendLE(out, bits, 4);
  } else if (dtype == DType::f64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    appendLE(out, bits, 8);
  } else {
    appendLE(out, dtype == DType::f16 ? detail::doubleToHalfBits(v) : detail::doubleToBF16Bits(v), 2);
  }
}

// ---------------------------------------------------------------- prim funcs

Buffer Parser::bufferDecl(bool bind_symbols) {
  const Token name = expect(Tok::Local, "a buffer (%name: dtype[shape])");
  expect(Tok::Colon, "':' and the type of buffer " + localName(name.value));
  DType d = dtypeWord(expect(Tok::Ident, "a dtype"));
  std::vector<PrimExpr> dims = shape(bind_symbols);
  StorageScope scope = StorageScope::global;
  if (check(Tok::Ident)) {
    const std::string_view w = peek().text;
    if (w == "global" || w == "shared" || w == "local") {
      scope = w == "global"   ? StorageScope::global
              : w == "shared" ? StorageScope::shared
                              : StorageScope::local;
      next();
    } else if (w != "alloc_buffer" && w != "for" && w != "block" && w != "if" && w != "init" &&
               w != "attrs") {
      failAt(peek(), "unknown storage scope '" + std::string(w) + "' (expected global, shared or local)");
    }
  }
  Buffer b = at(name, [&] { return makeBuffer(name.value, d, std::move(dims), scope); });
  define(name, b);
  note(b.get(), name);
  return b;
}

PrimFunc Parser::primFunc() {
  next();  // prim
  const Token name = expect(Tok::Global, "a function name (@name) after 'prim'");
  PrimFunc f;
  f.name = name.value;
  beginFunction();
  expect(Tok::LParen, "'(' after the function name");
  if (!check(Tok::RParen)) {
    do f.params.push_back(bufferDecl(true));
    while (accept(Tok::Comma));
    requireBoundSymbols();
  }
  expect(Tok::RParen, "')' after the parameters of " + detail::globalName(f.name));
  f.attrs = attrsClause();
  expect(Tok::LBrace, "'{' to open the body of " + detail::globalName(f.name));
  if (checkWord("trace")) f.trace = trace();
  while (checkWord("alloc_buffer")) {
    next();
    f.allocs.push_back(bufferDecl(false));
  }
  std::vector<Stmt> body;
  while (!check(Tok::RBrace)) body.push_back(stmt());
  next();
  if (!body.empty()) f.body = makeSeq(std::move(body));
  return f;
}

Trace Parser::trace() {
  next();  // trace
  expect(Tok::LBrace, "'{' after 'trace'");
  return traceBody(nullptr);
}

Trace Parser::traceBody(std::vector<SourceLoc>* locs) {
  Trace tr;
  std::unordered_set<std::string> defined;
  trace_refs_ = &defined;
  while (!accept(Tok::RBrace)) {
    TraceInst inst;
    const Token first = peek();
    std::unordered_map<std::string, Var> free_vars;
    trace_vars_ = &free_vars;
    std::vector<Token> outputs;
    if (check(Tok::Local)) {
      do outputs.push_back(expect(Tok::Local, "an output (%name)"));
      while (accept(Tok::Comma));
      expect(Tok::Assign, "'=' after the outputs of a trace instruction");
    }
    const Token name = expect(Tok::Ident, "a schedule instruction or '}'");
    inst.name = std::string(name.text);
    expect(Tok::LParen, "'(' after '" + inst.name + "'");
    if (!check(Tok::RParen)) {
      do {
        if (kwargAhead()) {
          kwarg(inst.attrs);
        } else {
          if (!inst.attrs.empty()) failAt(peek(), "positional argument after keyword arguments");
          inst.inputs.push_back(attrValue());
        }
      } while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "')' after arguments of '" + inst.name + "'");
    if (checkWord("decision")) {
      next();
      inst.decision = attrValue();
    }
    trace_vars_ = nullptr;
    for (const Token& o : outputs) {
      if (!defined.insert(o.value).second) failAt(o, "redefinition of " + localName(o.value));
      inst.outputs.push_back(o.value);
    }
    tr.insts.push_back(std::move(inst));
    if (locs) locs->push_back(SourceLoc{file_, first.line, first.col});
  }
  trace_refs_ = nullptr;
  return tr;
}

Stmt Parser::stmt() {
  const Token t = peek();
  DepthGuard guard(*this, t);
  Stmt s;
  if (checkWord("for"))
    s = forStmt();
  else if (checkWord("block"))
    s = blockStmt();
  else if (checkWord("if"))
    s = ifStmt();
  else if (t.kind == Tok::Local)
    s = storeStmt();
  else
    failAt(t, "expected a statement (for, block, if or a store) or '}', found " + detail::describeToken(t));
  note(s.get(), t);
  return s;
}

Stmt Parser::stmtBlock(const std::string& what) {
  expect(Tok::LBrace, "'{' to open " + what);
  std::vector<Stmt> stmts;
  while (!check(Tok::RBrace)) stmts.push_back(stmt());
  next();
  return makeSeq(std::move(stmts));
}

Stmt Parser::forStmt() {
  next();  // for
  const Token v = expect(Tok::Local, "a loop variable (%name) after 'for'");
  expectWord("in", "'in' after the loop variable");
  const Token zero = expect(Tok::Int, "the loop start 0");
  if (zero.text != "0" || !zero.suffix.empty()) failAt(zero, "loops start at 0");
  expect(Tok::DotDot, "'..' after the loop start");
  PrimExpr extent = expression();
  LoopKind kind = LoopKind::serial;
  std::string tag;
  if (check(Tok::Ident) && !checkWord("attrs")) {
    const Token k = next();
    const std::string_view w = k.text;
    if (w == "serial") {
      kind = LoopKind::serial;
    } else if (w == "parallel") {
      kind = LoopKind::parallel;
    } else if (w == "vectorized") {
      kind = LoopKind::vectorized;
    } else if (w == "unrolled") {
      kind = LoopKind::unrolled;
    } else if (w == "thread_binding") {
      kind = LoopKind::thread_binding;
      expect(Tok::LParen, "'(' after 'thread_binding'");
      const Token tt = expect(Tok::Ident, "a thread tag (blockIdx.x, threadIdx.x, vthread, ...)");
      tag = std::string(tt.text);
      if (accept(Tok::Dot)) tag += "." + std::string(expect(Tok::Ident, "a thread axis after '.'").text);
      if (!isValidThreadTag(tag))
        failAt(tt, "invalid thread tag '" + tag + "' (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread)");
      expect(Tok::RParen, "')' after the thread tag");
    } else {
      failAt(k, "unknown loop kind '" + std::string(w) +
                    "' (expected serial, parallel, vectorized, unrolled or thread_binding)");
    }
  }
  pushScope();
  Var var = makeVar(v.value);
  define(v, var);
  note(var.get(), v);
  Attrs attrs = attrsClause();
  Stmt body = stmtBlock("the loop body");
  popScope();
  return makeFor(var, extent, body, kind, tag, std::move(attrs));
}

std::vector<BufferRegion> Parser::regions(const char* what) {
  expectWord(what, std::string("'") + what + "(...)' in a block");
  expect(Tok::LParen, std::string("'(' after '") + what + "'");
  std::vector<BufferRegion> out;
  if (!check(Tok::RParen)) {
    do {
      const Token name = expect(Tok::Local, "a buffer region (%buffer[...])");
      BufferRegion r{bufferRef(name), {}};
      expect(Tok::LBracket, "'[' after buffer " + localName(name.value));
      if (!check(Tok::RBracket)) {
        do {
          PrimExpr min = expression();
          PrimExpr extent = accept(Tok::PlusColon) ? expression() : makeInt(1);
          r.region.push_back(Range{min, extent});
        } while (accept(Tok::Comma));
      }
      expect(Tok::RBracket, "']' after the region of " + localName(name.value));
      checkIndexCount(name, r.buffer, r.region.size(), r.region.size() == 1 ? "range" : "ranges");
      out.push_back(std::move(r));
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, std::string("')' after the ") + what + " regions");
  return out;
}

Stmt Parser::blockStmt() {
  next();  // block
  const std::string name = expect(Tok::String, "a quoted block name after 'block'").value;
  expect(Tok::LParen, "'(' and the iteration variables of block " + detail::quoteString(name));
  std::vector<IterVar> iter_vars;
  std::vector<Token> iter_tokens;
  if (!check(Tok::RParen)) {
    do {
      const Token v = expect(Tok::Local, "an iteration variable (%name = kind(extent, binding))");
      expect(Tok::Assign, "'=' after the iteration variable");
      const Token k = expect(Tok::Ident, "spatial, reduce or opaque");
      IterKind kind;
      if (k.text == "spatial")
        kind = IterKind::spatial;
      else if (k.text == "reduce")
        kind = IterKind::reduce;
      else if (k.text == "opaque")
        kind = IterKind::opaque;
      else
        failAt(k,
               "unknown iteration kind '" + std::string(k.text) + "' (expected spatial, reduce or opaque)");
      expect(Tok::LParen, "'(' after '" + std::string(k.text) + "'");
      PrimExpr extent = expression();
      expect(Tok::Comma, "',' and the binding after the extent");
      PrimExpr binding = expression();
      expect(Tok::RParen, "')' after the binding");
      iter_vars.push_back(IterVar{makeVar(v.value), extent, kind, binding});
      iter_tokens.push_back(v);
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "')' after the iteration variables");
  pushScope();
  for (size_t i = 0; i < iter_vars.size(); ++i) {
    define(iter_tokens[i], iter_vars[i].var);
    note(iter_vars[i].var.get(), iter_tokens[i]);
  }
  Attrs attrs = attrsClause();
  expect(Tok::LBrace, "'{' to open block " + detail::quoteString(name));
  PrimExpr predicate;
  if (checkWord("where")) {
    next();
    expect(Tok::LParen, "'(' after 'where'");
    predicate = expression();
    expect(Tok::RParen, "')' after the predicate");
  }
  auto reads = regions("reads");
  auto writes = regions("writes");
  std::vector<Buffer> allocs;
  while (checkWord("alloc_buffer")) {
    next();
    allocs.push_back(bufferDecl(false));
  }
  Stmt init;
  if (checkWord("init")) {
    next();
    pushScope();
    init = stmtBlock("the init part");
    popScope();
  }
  std::vector<Stmt> body;
  while (!check(Tok::RBrace)) body.push_back(stmt());
  next();
  popScope();
  return makeBlock(name, std::move(iter_vars), std::move(reads), std::move(writes), makeSeq(std::move(body)),
                   init, predicate, std::move(allocs), std::move(attrs));
}

Stmt Parser::ifStmt() {
  next();  // if
  PrimExpr cond = expression();
  pushScope();
  Stmt then_case = stmtBlock("the then part");
  popScope();
  Stmt else_case;
  if (checkWord("else")) {
    next();
    pushScope();
    else_case = stmtBlock("the else part");
    popScope();
  }
  return makeIf(cond, then_case, else_case);
}

Stmt Parser::storeStmt() {
  const Token name = next();
  Buffer b = bufferRef(name);
  expect(Tok::LBracket, "'[' and the indices of the store to " + localName(name.value));
  auto idx = exprList(Tok::RBracket, "']' after the indices of " + localName(name.value));
  checkIndexCount(name, b, idx.size(), idx.size() == 1 ? "index" : "indices");
  expect(Tok::Assign, "'=' after the store target");
  PrimExpr value = expression();
  for (const auto& i : idx)
    if (!isInt(i->dtype))
      failAt(name,
             "index of buffer " + localName(name.value) + " has dtype " + std::string(dtypeName(i->dtype)));
  return at(name, [&] { return makeStore(b, std::move(idx), value); });
}

// ---------------------------------------------------------------- module

Module Parser::module() {
  // Header: `mlcc.ir 1` on the first (non-comment) line.
  const Token first = peek();
  const bool header = checkWord("mlcc") && check(Tok::Dot, 1) && checkWord("ir", 2) && check(Tok::Int, 3) &&
                      adjacent(peek(0), peek(1)) && adjacent(peek(1), peek(2)) && peek(3).line == first.line;
  if (!header) failAt(first, "the first line must be 'mlcc.ir 1'");
  next();
  next();
  next();
  const Token version = next();
  if (version.text != "1" || !version.suffix.empty())
    failAt(version,
           "unsupported IR format version " + std::string(version.text) + std::string(version.suffix));
  if (!check(Tok::Eof) && peek().line == version.line)
    failAt(peek(), "expected a newline after 'mlcc.ir 1', found " + detail::describeToken(peek()));

  Module m;
  while (checkWord("weights")) {
    next();
    m.weight_files.push_back(expect(Tok::String, "a quoted file name after 'weights'").value);
  }
  std::vector<Token> extern_tokens;
  while (checkWord("extern")) {
    extern_tokens.push_back(peek());
    m.externs.push_back(externFunc());
    if (checkWord("weights")) failAt(peek(), "'weights' lines must come before the extern declarations");
  }
  std::vector<Token> name_tokens;
  std::unordered_set<std::string> names;
  while (!check(Tok::Eof)) {
    const Token t = peek();
    if (checkWord("graph"))
      m.functions.emplace_back(graphFunc());
    else if (checkWord("prim"))
      m.functions.emplace_back(primFunc());
    else if (checkWord("weights"))
      failAt(t, "'weights' lines must come before all functions");
    else if (checkWord("extern"))
      failAt(t, "'extern' declarations must come before all functions");
    else
      failAt(t, "expected 'graph' or 'prim', found " + detail::describeToken(t));
    const std::string& fname = functionName(m.functions.back());
    if (!names.insert(fname).second) failAt(t, "redefinition of function " + detail::globalName(fname));
    name_tokens.push_back(t);
  }
  for (size_t i = 0; i < m.functions.size(); ++i)
    std::visit([&](const auto& fn) { note(&fn, name_tokens[i]); }, m.functions[i]);
  for (size_t i = 0; i < m.externs.size(); ++i) note(&m.externs[i], extern_tokens[i]);
  return m;
}

ScheduleScript Parser::scheduleScript() {
  ScheduleScript script;
  script.file = file_;
  script.text = text_;
  while (!check(Tok::Eof)) {
    expectWord("schedule", "'schedule @function { ... }'");
    const Token name = expect(Tok::Global, "a function name (@name) after 'schedule'");
    ScheduleScript::Block block;
    block.func = name.value;
    block.loc = SourceLoc{file_, name.line, name.col};
    expect(Tok::LBrace, "'{' and the schedule instructions of " + detail::globalName(block.func));
    beginFunction();
    block.trace = traceBody(&block.inst_locs);
    script.blocks.push_back(std::move(block));
  }
  return script;
}

PrimExpr Parser::standaloneExpr() {
  create_free_vars_ = true;
  PrimExpr e = expression();
  if (!check(Tok::Eof))
    failAt(peek(), "expected the end of the expression, found " + detail::describeToken(peek()));
  return e;
}

}  // namespace

mlcc::Error SourceMap::errorAt(const void* node, const std::string& message) const {
  auto it = locs.find(node);
  if (it == locs.end()) return mlcc::Error(message);
  return mlcc::Error(it->second, message, lineOf(text, it->second.line));
}

Module parseModule(const std::string& text, const std::string& filename, SourceMap* source_map) {
  if (source_map) {
    source_map->file = filename;
    source_map->text = text;
    source_map->locs.clear();
  }
  Parser p(text, filename, source_map);
  return p.module();
}

Module parseModuleFile(const std::string& path, SourceMap* source_map) {
  std::string text = readInput(path);
  Module m = parseModule(text, displayName(path), source_map);
  m.base_dir = directoryOf(path);
  for (const auto& f : m.weight_files)
    noteInputFile(resolvePath(m.base_dir, f));  // no output may replace them
  return m;
}

ScheduleScript parseScheduleScript(const std::string& text, const std::string& filename) {
  Parser p(text, filename, nullptr);
  return p.scheduleScript();
}

PrimExpr parseExpr(const std::string& text) {
  Parser p(text, "<expr>", nullptr);
  return p.standaloneExpr();
}

}  // namespace mlcc::ir
