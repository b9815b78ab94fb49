// The pattern language of fuse-by-pattern (see pattern.h): YAML parsing with
// file:line:col errors, and matching.
#include "pattern.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "mlcc/ir/op_type_info.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/library_kernels.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::transform {

namespace {

class Parser {
 public:
  Parser(const std::string& text, std::string file) : text_(text), file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& key, const std::string& msg) const {
    throw errorInText(file_, text_, mark.line, mark.column, (key.empty() ? "" : key + ": ") + msg);
  }

  PatternFile parse() {
    YAML::Node root;
    try {
      root = YAML::Load(text_);
    } catch (const YAML::Exception& e) {
      fail(e.mark, "", "invalid YAML: " + e.msg);
    }
    if (!root.IsMap())
      fail(root.Mark(), "", "a pattern file is a map with the keys 'patterns' and/or 'rewrites'");
    for (const auto& kv : root)
      if (kv.first.Scalar() != "patterns" && kv.first.Scalar() != "rewrites" &&
          kv.first.Scalar() != "externs")
        fail(kv.first.Mark(), kv.first.Scalar(),
             "unknown key (a pattern file has 'patterns', 'rewrites' and 'externs')");
    YAML::Node list = root["patterns"], rewrites = root["rewrites"], externs = root["externs"];
    if (!list && !rewrites) fail(root.Mark(), "patterns", "missing (and no 'rewrites')");
    PatternFile out;
    if (externs) {
      if (!externs.IsSequence()) fail(externs.Mark(), "externs", "must be a list of extern functions");
      for (size_t i = 0; i < externs.size(); ++i) {
        ir::ExternFunc e = parseExtern(externs[i], "externs[" + std::to_string(i) + "]");
        for (const auto& prior : out.externs)
          if (prior.name == e.name)
            fail(externs[i]["name"].Mark(), "externs[" + std::to_string(i) + "].name",
                 "duplicate name '" + e.name + "'");
        out.externs.push_back(std::move(e));
      }
    }
    externs_ = &out.externs;
    std::map<std::string, bool> names;  // patterns and rules share one namespace
    // The items of `list` (under `field`), each parsed by `parse`, into `into`.
    auto parseList = [&](const YAML::Node& list, const std::string& field, const std::string& what,
                         auto parse, auto& into) {
      if (!list) return;
      if (!list.IsSequence()) fail(list.Mark(), field, "must be a list of " + what);
      for (size_t i = 0; i < list.size(); ++i) {
        std::string key = field + "[" + std::to_string(i) + "]";
        auto item = (this->*parse)(list[i], key);
        if (names.count(item.name))
          fail(list[i]["name"].Mark(), key + ".name", "duplicate name '" + item.name + "'");
        names[item.name] = true;
        into.push_back(std::move(item));
      }
    };
    parseList(list, "patterns", "patterns", &Parser::parsePattern, out.patterns);
    parseList(rewrites, "rewrites", "rewrite rules", &Parser::parseRewrite, out.rewrites);
    return out;
  }

 private:
  const std::vector<ir::ExternFunc>* externs_ = nullptr;  // the file's, once parsed

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n.Mark(), key, "must be a string");
    return n.Scalar();
  }

  Pattern parsePattern(const YAML::Node& n, const std::string& key) {
    if (!n.IsMap()) fail(n.Mark(), key, "a pattern is a map with 'name', 'ops' and optional 'codegen'");
    Pattern p;
    for (const auto& kv : n) {
      std::string k = kv.first.Scalar();
      if (k != "name" && k != "ops" && k != "codegen")
        fail(kv.first.Mark(), key + "." + k, "unknown key (expected name, ops, codegen)");
    }
    if (!n["name"]) fail(n.Mark(), key + ".name", "missing");
    p.name = scalar(n["name"], key + ".name");
    if (n["codegen"]) p.codegen = scalar(n["codegen"], key + ".codegen");
    parseOps(n, "ops", key, p);
    if (!p.codegen.empty()) checkKernel(p, n["codegen"], key + ".codegen");
    return p;
  }

  // An entry of `externs`: a user library function, checked as the IR's
  // extern declaration it becomes (ir::ExternFunc):
  //   - name: mylib.linear_relu        # what call_extern names
  //     symbol: mylib_linear_relu      # the C function (default: the name, '.' -> '_')
  //     library: libmylib.so           # relative to this file: .so, .o or .a
  //     params: ["x: f32[n, k]", "w: f32[m, k]", "b: f32[m]"]
  //     result: "f32[n, m]"
  ir::ExternFunc parseExtern(const YAML::Node& n, const std::string& key) const {
    if (!n.IsMap()) fail(n.Mark(), key, "an extern is a map with 'name', 'library', 'params' and 'result'");
    for (const auto& kv : n) {
      std::string k = kv.first.Scalar();
      if (k != "name" && k != "symbol" && k != "library" && k != "params" && k != "result")
        fail(kv.first.Mark(), key + "." + k, "unknown key (expected name, symbol, library, params, result)");
    }
    for (const char* k : {"name", "library", "params", "result"})
      if (!n[k]) fail(n.Mark(), key + "." + k, "missing");
    const std::string name = scalar(n["name"], key + ".name");
    if (name.empty() || name.starts_with("blas.") || name.starts_with("cublas."))
      fail(n["name"].Mark(), key + ".name",
           "'" + name + "': the prefixes blas. and cublas. are mlcc's kernels");
    std::string symbol = n["symbol"] ? scalar(n["symbol"], key + ".symbol") : name;
    if (!n["symbol"])
      for (char& c : symbol)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    std::string library = scalar(n["library"], key + ".library");
    if (!library.empty() && library[0] != '/' && file_ != "-" && file_ != "<stdin>")
      library =
          std::filesystem::absolute(resolvePath(directoryOf(file_), library)).lexically_normal().string();
    const YAML::Node params = n["params"];
    if (!params.IsSequence())
      fail(params.Mark(), key + ".params", "must be a list of \"name: type\" strings");
    // Parsed as an IR declaration; the name and the strings are set after.
    std::string text = "mlcc.ir 1\nextern \"e\"(";
    for (size_t i = 0; i < params.size(); ++i) {
      std::string p = scalar(params[i], key + ".params[" + std::to_string(i) + "]");
      text += (i ? ", " : "") + std::string(p.starts_with("%") ? "" : "%") + p;
    }
    text += ") -> " + scalar(n["result"], key + ".result") + " attrs(library = \"l\", symbol = \"s\")\n";
    try {
      ir::Module m = ir::parseModule(text, "<extern>");
      m.externs.at(0).name = name;
      m.externs.at(0).library = library;
      m.externs.at(0).symbol = symbol;
      ir::verifyModule(m, ir::structuralChecksOnly());
      return std::move(m.externs.at(0));
    } catch (const Error& e) {
      fail(n.Mark(), key, "not a valid extern declaration: " + e.message());
    }
  }

  // The op list under `field` of `n` into p.ops (every op feeding the last).
  void parseOps(const YAML::Node& n, const std::string& field, const std::string& key, Pattern& p) {
    YAML::Node ops = n[field];
    if (!ops) fail(n.Mark(), key + "." + field, "missing");
    if (!ops.IsSequence() || ops.size() == 0)
      fail(ops.Mark(), key + "." + field, "must be a non-empty list of ops");
    std::vector<bool> used(ops.size(), false);
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string okey = key + "." + field + "[" + std::to_string(i) + "]";
      p.ops.push_back(parseOp(ops[i], okey, static_cast<int>(i), p.named, used));
    }
    for (size_t i = 0; i + 1 < ops.size(); ++i)
      if (!used[i])
        fail(ops[i].Mark(), key + "." + field + "[" + std::to_string(i) + "]",
             "op '" + p.ops[i].op + "' does not feed the " + (field == "ops" ? "pattern's" : "rule's") +
                 " root (the last op)");
  }

  Rewrite parseRewrite(const YAML::Node& n, const std::string& key) {
    if (!n.IsMap()) fail(n.Mark(), key, "a rewrite rule is a map with 'name', 'match' and 'replace'");
    for (const auto& kv : n) {
      std::string k = kv.first.Scalar();
      if (k != "name" && k != "match" && k != "replace")
        fail(kv.first.Mark(), key + "." + k, "unknown key (expected name, match, replace)");
    }
    if (!n["name"]) fail(n.Mark(), key + ".name", "missing");
    Rewrite r;
    r.name = r.match.name = scalar(n["name"], key + ".name");
    parseOps(n, "match", key, r.match);
    std::set<std::string> wildcards;
    for (const auto& op : r.match.ops)
      for (const auto& a : op.args)
        if (a.node < 0) wildcards.insert(a.name);
    // The replace ops: parsed as pattern ops would be (ops, arity, `_`,
    // `as` names), then each name resolved against the match.
    Pattern replaced;
    parseOps(n, "replace", key, replaced);
    YAML::Node list = n["replace"];
    for (size_t i = 0; i < replaced.ops.size(); ++i) {
      const std::string okey = key + ".replace[" + std::to_string(i) + "]";
      const PatternOp& po = replaced.ops[i];
      RewriteOp op{po.op, {}, po.attrs};
      for (const PatternArg& a : po.args) {
        RewriteArg arg;
        if (a.node >= 0)
          arg.replace = a.node;
        else if (auto it = r.match.named.find(a.name); it != r.match.named.end())
          arg.match = it->second;
        else if (wildcards.count(a.name))
          arg.wildcard = a.name;
        else
          fail(list[i].Mark(), okey,
               "'" + a.name +
                   "' names nothing of the match (its wildcards and 'as' names) or an earlier replace op");
        op.args.push_back(arg);
      }
      for (const auto& [name, at] : replaced.named)
        if (at == static_cast<int>(i) && (wildcards.count(name) || r.match.named.count(name)))
          fail(list[i].Mark(), okey + ".as", "name '" + name + "' is already used by the match");
      // Required attributes present, values of the right kinds.
      try {
        (void)ops::normalizeAttrs(*ops::findOp(op.op), op.attrs);
      } catch (const Error& e) {
        fail(list[i].Mark(), okey, e.message());
      }
      r.replace.push_back(std::move(op));
    }
    return r;
  }

  // A pattern dispatched to a library kernel must compute what the kernel
  // computes: its ops are bound to the kernel as a matched group would be
  // (ops::bindLibraryKernel), with untyped stand-ins for the wildcards; only
  // the ops and their wiring are checked here, types are checked per match.
  void checkKernel(const Pattern& p, const YAML::Node& n, const std::string& key) const {
    if (const ir::ExternFunc* e = ir::findExtern(*externs_, p.codegen))
      return checkExternOperands(p, *e, n, key);
    std::optional<ops::LibraryKernel> kernel = ops::findLibraryKernel(p.codegen);
    if (!kernel)
      fail(n.Mark(), key,
           "'" + p.codegen + "' is no library kernel (known: " + ops::libraryKernelList("blas") + ", " +
               ops::libraryKernelList("cublas") + ") and no extern of this file");
    std::vector<ir::Binding> bindings(p.ops.size());
    std::map<std::string, ir::GraphVar> wildcards;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      bindings[i].var = ir::makeGraphVar("op" + std::to_string(i),
                                         ir::Type::tensor(ir::DType::f32, std::vector<int64_t>{}));
      bindings[i].value.kind = ir::ValueKind::Op;
      bindings[i].value.callee = p.ops[i].op;
      bindings[i].value.attrs = p.ops[i].attrs;
      for (const PatternArg& a : p.ops[i].args) {
        if (a.node >= 0) {
          bindings[i].value.args.push_back(bindings[static_cast<size_t>(a.node)].var);
          continue;
        }
        ir::GraphVar& w = wildcards[a.name];
        if (!w) w = ir::makeGraphVar(a.name, ir::Type::tensor(ir::DType::f32, std::vector<int64_t>{}));
        bindings[i].value.args.push_back(w);
      }
    }
    std::vector<const ir::Binding*> body;
    for (const auto& b : bindings) body.push_back(&b);
    ops::KernelBinding bound = ops::bindLibraryKernel(*kernel, body);
    if (bound.wrong_ops) fail(n.Mark(), key, bound.mismatch);
  }

  // A pattern dispatched to a user extern passes its wildcards as the
  // extern's operands, by name: they must be the extern's parameters.
  void checkExternOperands(const Pattern& p, const ir::ExternFunc& e, const YAML::Node& n,
                           const std::string& key) const {
    std::set<std::string> wildcards, params;
    for (const auto& op : p.ops)
      for (const auto& a : op.args)
        if (a.node < 0) wildcards.insert(a.name);
    for (const auto& v : e.params) params.insert(v->name);
    if (wildcards != params) {
      auto list = [](const std::set<std::string>& names) {
        std::string s;
        for (const auto& x : names) s += (s.empty() ? "" : ", ") + x;
        return s;
      };
      fail(n.Mark(), key,
           "the operands of extern '" + e.name + "' are its parameters by name (" + list(params) +
               "), but the pattern's wildcards are " + list(wildcards));
    }
  }

  PatternOp parseOp(const YAML::Node& n, const std::string& key, int index, std::map<std::string, int>& named,
                    std::vector<bool>& used) {
    // (yaml-cpp: assigning to a Node writes through to the node it refers
    // to, so nodes are only ever initialized here.)
    bool is_map = n.IsMap();
    std::string as;
    if (is_map) {
      for (const auto& kv : n) {
        std::string k = kv.first.Scalar();
        if (k != "op" && k != "as" && k != "attrs")
          fail(kv.first.Mark(), key + "." + k, "unknown key (expected op, as, attrs)");
      }
      if (!n["op"]) fail(n.Mark(), key + ".op", "missing");
      if (n["as"]) as = scalar(n["as"], key + ".as");
    }
    const YAML::Node call = is_map ? n["op"] : n;
    const YAML::Node attrs = is_map ? n["attrs"] : YAML::Node();
    std::string text = scalar(call, is_map ? key + ".op" : key);
    std::string ckey = is_map ? key + ".op" : key;
    // OP(ARG, ...)
    auto open = text.find('('), close = text.rfind(')');
    auto trim = [](std::string s) {
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
      return s;
    };
    if (open == std::string::npos || close == std::string::npos || close < open ||
        trim(text.substr(close + 1)) != "")
      fail(call.Mark(), ckey, "expected an op call like 'dense(x, w)', not '" + text + "'");
    PatternOp op;
    op.op = trim(text.substr(0, open));
    const ops::OpDef* def = ops::findOp(op.op);
    if (!def) fail(call.Mark(), ckey, "unknown op '" + op.op + "'");
    std::string inner = trim(text.substr(open + 1, close - open - 1));
    if (!inner.empty()) {
      size_t start = 0;
      while (true) {
        size_t comma = inner.find(',', start);
        std::string a =
            trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        bool ident = !a.empty();
        for (char c : a)
          ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
        if (!ident) fail(call.Mark(), ckey, "bad argument '" + a + "' in '" + text + "'");
        PatternArg arg;
        if (a == "_") {
          if (index == 0) fail(call.Mark(), ckey, "'_' (the previous op's result) in the first op");
          arg.node = index - 1;
        } else if (auto it = named.find(a); it != named.end()) {
          arg.node = it->second;
        } else {
          arg.name = a;
        }
        if (arg.node >= 0) used[arg.node] = true;
        op.args.push_back(arg);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    int n_args = static_cast<int>(op.args.size());
    if (n_args < def->min_inputs || (def->max_inputs >= 0 && n_args > def->max_inputs))
      fail(call.Mark(), ckey,
           "op '" + op.op + "' takes " + std::to_string(def->min_inputs) +
               (def->max_inputs == def->min_inputs ? "" : " or more") + " operand(s), not " +
               std::to_string(n_args));
    if (is_map && attrs) {
      if (!attrs.IsMap()) fail(attrs.Mark(), key + ".attrs", "must be a map of attribute constraints");
      for (const auto& kv : attrs) {
        std::string name = kv.first.Scalar();
        std::string akey = key + ".attrs." + name;
        const ops::AttrSpec* spec = nullptr;
        for (const auto& s : def->attrs)
          if (s.name == name) spec = &s;
        if (!spec) fail(kv.first.Mark(), akey, "op '" + op.op + "' has no attribute '" + name + "'");
        op.attrs[name] = attrValue(kv.second, *spec, akey);
      }
    }
    if (!as.empty()) {
      if (as == "_" || named.count(as))
        fail(n["as"].Mark(), key + ".as", "name '" + as + "' is already used");
      named[as] = index;
    }
    return op;
  }

  ir::AttrValue attrValue(const YAML::Node& v, const ops::AttrSpec& spec, const std::string& key) const {
    try {
      switch (spec.kind) {
        case ops::AttrKind::Int: return ir::AttrValue(v.as<int64_t>());
        case ops::AttrKind::Float: return ir::AttrValue(v.as<double>());
        case ops::AttrKind::Bool: return ir::AttrValue(v.as<bool>());
        case ops::AttrKind::Str: return ir::AttrValue(v.as<std::string>());
        case ops::AttrKind::Ints:
        case ops::AttrKind::Dims: return ir::AttrValue::ints(v.as<std::vector<int64_t>>());
        case ops::AttrKind::Floats: {
          ir::AttrValue::List l;
          for (double d : v.as<std::vector<double>>()) l.push_back(ir::AttrValue(d));
          return ir::AttrValue(l);
        }
      }
    } catch (const YAML::Exception&) {
    }
    fail(v.Mark(), key, std::string("must be ") + ops::attrKindName(spec.kind));
  }

  const std::string& text_;
  std::string file_;
};

bool commutative(const std::string& op) {
  return op == "add" || op == "multiply" || op == "maximum" || op == "minimum";
}

bool attrsMatch(const ops::OpDef& def, const ir::Attrs& given, const ir::Attrs& want) {
  if (want.empty()) return true;
  ir::Attrs attrs;
  try {
    attrs = ops::normalizeAttrs(def, given);
  } catch (const Error&) {
    return false;
  }
  for (const auto& [name, value] : want) {
    auto it = attrs.find(name);
    if (it == attrs.end()) return false;
    if (value.isFloat()) {
      if (!(it->second.isFloat() || it->second.isInt()) || ops::attrFloat(attrs, name) != value.asFloat())
        return false;
    } else if (ir::printAttrValue(it->second) != ir::printAttrValue(value)) {
      return false;
    }
  }
  return true;
}

struct MatchState {
  std::vector<size_t> at;  // pattern op -> binding index (npos: unmatched)
  std::map<std::string, ir::GraphVar> wild;
};

}  // namespace

PatternFile parsePatternFile(const std::string& text, const std::string& filename) {
  return Parser(text, filename).parse();
}

std::vector<Pattern> parsePatterns(const std::string& text, const std::string& filename) {
  return parsePatternFile(text, filename).patterns;
}

PatternFile loadPatternFile(const std::string& path) {
  std::string text;
  try {
    text = readInput(path);
  } catch (const Error& e) {
    throw Error("pattern file '" + path + "': " + e.message());
  }
  return parsePatternFile(text, path);
}

PatternFile passPatternFile(const PassOptions& opts, const PassContext& ctx) {
  std::string path = opts.getString("patterns");
  if (path.empty()) path = ctx.patterns_path;
  if (path.empty()) throw Error("no pattern file (pass option patterns=FILE or --patterns FILE)");
  return loadPatternFile(path);
}

std::optional<std::vector<size_t>> matchPattern(const Pattern& p, const ir::BindingBlock& block, size_t root,
                                                const std::unordered_set<size_t>& taken,
                                                std::map<std::string, ir::GraphVar>* wildcards) {
  constexpr size_t npos = static_cast<size_t>(-1);
  std::unordered_map<const ir::GraphVarNode*, size_t> index;
  for (size_t i = 0; i < block.bindings.size() && i <= root; ++i) index[block.bindings[i].var.get()] = i;

  // Matches pattern op `pi` at binding `bi`; on failure `s` may be partly
  // updated (callers copy it).
  std::function<bool(int, size_t, MatchState&)> match = [&](int pi, size_t bi, MatchState& s) -> bool {
    if (s.at[pi] != npos) return s.at[pi] == bi;
    for (size_t k = 0; k < s.at.size(); ++k)
      if (s.at[k] == bi) return false;  // a binding matches one pattern op
    const ir::Binding& b = block.bindings[bi];
    const PatternOp& po = p.ops[pi];
    if (taken.count(bi) || b.value.kind != ir::ValueKind::Op || b.value.callee != po.op) return false;
    if (b.value.args.size() != po.args.size()) return false;
    const ops::OpDef* def = ops::findOp(po.op);
    if (!def || !attrsMatch(*def, b.value.attrs, po.attrs)) return false;
    s.at[pi] = bi;
    auto matchArgs = [&](const std::vector<ir::GraphVar>& args, MatchState& st) {
      for (size_t j = 0; j < args.size(); ++j) {
        const PatternArg& pa = po.args[j];
        if (pa.node >= 0) {
          auto it = index.find(args[j].get());
          if (it == index.end() || !match(pa.node, it->second, st)) return false;
        } else {
          auto [w, inserted] = st.wild.emplace(pa.name, args[j]);
          if (!inserted && w->second != args[j]) return false;
        }
      }
      return true;
    };
    MatchState trial = s;
    if (matchArgs(b.value.args, trial)) {
      s = std::move(trial);
      return true;
    }
    if (commutative(po.op) && b.value.args.size() == 2) {
      trial = s;
      std::vector<ir::GraphVar> swapped{b.value.args[1], b.value.args[0]};
      if (matchArgs(swapped, trial)) {
        s = std::move(trial);
        return true;
      }
    }
    s.at[pi] = npos;
    return false;
  };
  MatchState s;
  s.at.assign(p.ops.size(), npos);
  if (!match(static_cast<int>(p.ops.size()) - 1, root, s)) return std::nullopt;
  for (size_t a : s.at)
    if (a == npos) return std::nullopt;
  if (wildcards) *wildcards = std::move(s.wild);
  return s.at;
}

}  // namespace mlcc::transform
