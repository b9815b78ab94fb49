// The pass manager: pass lookup, option typing, the pipeline parser and the
// pipeline runner (see pass.h).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>

#include "mlcc/ir/entry.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"
#include "pass_registry.h"

namespace mlcc::transform {

namespace {

std::map<std::string, PassInfo>& registry() {
  static std::map<std::string, PassInfo> passes;
  static std::once_flag once;
  std::call_once(once, [] {
    for (PassInfo& p : allPassInfos()) {
      std::string name = p.name;
      passes.emplace(std::move(name), std::move(p));
    }
  });
  return passes;
}

const char* kindName(OptionKind k) {
  switch (k) {
    case OptionKind::Int: return "int";
    case OptionKind::Float: return "float";
    case OptionKind::Bool: return "bool";
    case OptionKind::String: return "string";
  }
  return "?";
}

// Whether `text` is a valid value of `kind`.
bool validValue(OptionKind kind, const std::string& text) {
  if (text.empty()) return kind == OptionKind::String;
  switch (kind) {
    case OptionKind::Int: {
      size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
      if (i == text.size() || text.size() > 19) return false;
      return std::all_of(text.begin() + i, text.end(), [](char c) { return std::isdigit((unsigned char)c); });
    }
    case OptionKind::Float: {
      char* end = nullptr;
      std::strtod(text.c_str(), &end);
      return end == text.c_str() + text.size();
    }
    case OptionKind::Bool: return text == "true" || text == "false";
    case OptionKind::String: return true;
  }
  return false;
}

class PipelineParser {
 public:
  PipelineParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Pipeline parse() {
    Pipeline pipeline;
    skipSpace();
    if (pos_ == text_.size()) return pipeline;  // an empty pipeline does nothing
    while (true) {
      pipeline.push_back(entry());
      skipSpace();
      if (pos_ == text_.size()) break;
      if (text_[pos_] != ',') fail("expected ',' between passes");
      ++pos_;
      skipSpace();
    }
    return pipeline;
  }

 private:
  [[noreturn]] void fail(const std::string& message, size_t at = std::string::npos) const {
    size_t col = (at == std::string::npos ? pos_ : at) + 1;
    throw Error(SourceLoc{source_, 1, static_cast<int>(col)}, message, text_);
  }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace((unsigned char)text_[pos_])) ++pos_;
  }

  std::string name() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum((unsigned char)text_[pos_]) || text_[pos_] == '-' || text_[pos_] == '_'))
      ++pos_;
    return text_.substr(start, pos_ - start);
  }

  PipelineEntry entry() {
    size_t start = pos_;
    std::string pass_name = name();
    if (pass_name.empty()) fail("expected a pass name");
    const PassInfo* pass = findPass(pass_name);
    if (!pass) {
      std::string known;
      for (const auto* p : allPasses()) known += (known.empty() ? "" : ", ") + p->name;
      fail("unknown pass '" + pass_name + "' (passes: " + known + ")", start);
    }
    PipelineEntry e;
    e.pass = pass;
    e.column = static_cast<int>(start) + 1;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '{') {
      ++pos_;
      skipSpace();
      while (pos_ < text_.size() && text_[pos_] != '}') {
        size_t opt_start = pos_;
        std::string opt = name();
        if (opt.empty()) fail("expected an option name of pass '" + pass_name + "'");
        auto spec = std::find_if(pass->options.begin(), pass->options.end(),
                                 [&](const PassOptionSpec& s) { return s.name == opt; });
        if (spec == pass->options.end()) {
          std::string known;
          for (const auto& s : pass->options) known += (known.empty() ? "" : ", ") + s.name;
          fail("pass '" + pass_name + "' has no option '" + opt + "'" +
                   (known.empty() ? " (it takes none)" : " (options: " + known + ")"),
               opt_start);
        }
        if (e.options.values.count(opt)) fail("option '" + opt + "' given twice", opt_start);
        skipSpace();
        if (pos_ >= text_.size() || text_[pos_] != '=') fail("expected '=' after option '" + opt + "'");
        ++pos_;
        skipSpace();
        size_t value_start = pos_;
        while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}') ++pos_;
        std::string value = text_.substr(value_start, pos_ - value_start);
        while (!value.empty() && std::isspace((unsigned char)value.back())) value.pop_back();
        if (!validValue(spec->kind, value))
          fail("option '" + opt + "' of pass '" + pass_name + "' takes " +
                   (spec->kind == OptionKind::Int ? "an " : "a ") + kindName(spec->kind) + ", not '" + value +
                   "'",
               value_start);
        e.options.values[opt] = value;
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          skipSpace();
        }
      }
      if (pos_ >= text_.size()) fail("expected '}' to close the options of pass '" + pass_name + "'");
      ++pos_;
    }
    for (const auto& spec : pass->options)
      if (!e.options.values.count(spec.name)) e.options.values[spec.name] = spec.default_value;
    return e;
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
};

const std::string& optionValue(const PassOptions& o, const std::string& name) {
  auto it = o.values.find(name);
  if (it == o.values.end()) throw Error("internal: pass option '" + name + "' is not declared");
  return it->second;
}

}  // namespace

int64_t PassOptions::getInt(const std::string& name) const { return std::stoll(optionValue(*this, name)); }
double PassOptions::getFloat(const std::string& name) const { return std::stod(optionValue(*this, name)); }
bool PassOptions::getBool(const std::string& name) const { return optionValue(*this, name) == "true"; }
const std::string& PassOptions::getString(const std::string& name) const { return optionValue(*this, name); }

const PassInfo* findPass(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

void registerPass(PassInfo info) {
  if (info.name.empty() || !info.run) throw Error("a pass needs a name and a run function");
  std::string name = info.name;
  if (!registry().emplace(name, std::move(info)).second) throw Error("a pass named '" + name + "' exists");
}

std::vector<const PassInfo*> allPasses() {
  std::vector<const PassInfo*> out;
  for (const auto& [name, p] : registry()) out.push_back(&p);
  return out;
}

Pipeline parsePipeline(const std::string& text, const std::string& source_name) {
  return PipelineParser(text, source_name).parse();
}

Error PassContext::errorAt(const void* node, const std::string& message) const {
  return source_map ? source_map->errorAt(node, message) : Error(message);
}

void runPipeline(ir::Module& m, const Pipeline& pipeline, PassContext& ctx) {
  for (const auto& entry : pipeline) {
    auto start = std::chrono::steady_clock::now();
    std::string changed;
    // The outputs' names of each graph function, which no pass may change
    // (forwarding `%y = %x` into a return renames it to x): kept below.
    std::map<std::string, std::vector<std::string>> output_names;
    for (const auto& fn : m.functions)
      if (const auto* g = std::get_if<ir::GraphFunc>(&fn)) output_names[g->name] = ir::outputNames(*g);
    try {
      changed = entry.pass->run(m, entry.options, ctx);
    } catch (const Error& e) {
      if (e.loc().line > 0) throw;
      throw Error("pass '" + entry.pass->name + "': " + e.message());
    }
    for (auto& fn : m.functions)
      if (auto* g = std::get_if<ir::GraphFunc>(&fn))
        if (auto it = output_names.find(g->name); it != output_names.end())
          ir::pinOutputNames(*g, it->second);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ctx.verbose && ctx.log) {
      std::ostringstream line;
      line.setf(std::ios::fixed);
      line.precision(1);
      line << entry.pass->name << ": " << ms << " ms" << (changed.empty() ? ", no change" : ", " + changed)
           << "\n";
      *ctx.log << line.str();
    }
    if (ctx.verify_each) {
      try {
        ir::verifyModule(m, ops::opTypeInfo(), ctx.source_map);
      } catch (const Error& e) {
        throw Error(e.loc(), "pass '" + entry.pass->name + "' produced an invalid module: " + e.message(),
                    e.source_line());
      }
    }
  }
}

std::string listPasses() {
  std::ostringstream out;
  for (const auto* p : allPasses()) {
    out << p->name << "\n    " << p->summary << "\n";
    for (const auto& o : p->options)
      out << "    " << o.name << "=<" << kindName(o.kind)
          << "> (default: " << (o.default_value.empty() ? "\"\"" : o.default_value) << ")  " << o.help
          << "\n";
  }
  return out.str();
}

}  // namespace mlcc::transform
