// Targets and the driver of the default rules (see rules.h).
#include "mlcc/schedule/rules.h"

#include <sstream>
#include <thread>

#include "mlcc/support/diagnostic.h"
#include "rule.h"

namespace mlcc::schedule {

namespace {

int hostVectorBits() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2")) return 256;
#endif
  return 128;
}

int positiveInt(const std::string& text, const std::string& option) {
  try {
    size_t used = 0;
    int v = std::stoi(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw Error("target: " + option + " must be a positive integer, not '" + text + "'");
}

}  // namespace

Target Target::parse(const std::string& text) {
  std::istringstream in(text);
  std::string kind;
  in >> kind;
  Target t;
  if (kind == "llvm") {
    t.kind = Kind::llvm;
    t.vector_bits = hostVectorBits();
    t.num_cores = std::max(1u, std::thread::hardware_concurrency());
  } else if (kind == "cuda") {
    t.kind = Kind::cuda;
  } else {
    throw Error("unknown target '" + kind + "' (expected llvm or cuda, e.g. \"llvm -num-cores=2\")");
  }
  for (std::string opt; in >> opt;) {
    auto eq = opt.find('=');
    std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (t.kind == Kind::llvm && key == "-mcpu" && !value.empty()) {
      t.mcpu = value;
      if (value.find("avx512") != std::string::npos || value == "skylake-avx512" ||
          value == "icelake-server" || value == "sapphirerapids" || value == "znver4")
        t.vector_bits = 512;
      else if (value != "native")
        t.vector_bits = value.find("avx2") != std::string::npos || value == "haswell" || value == "znver2" ||
                                value == "znver3" || value == "skylake"
                            ? 256
                            : 128;
    } else if (t.kind == Kind::llvm && key == "-num-cores") {
      t.num_cores = positiveInt(value, key);
    } else if (t.kind == Kind::llvm && key == "-vector-bits") {
      t.vector_bits = positiveInt(value, key);
    } else if (t.kind == Kind::cuda && key == "-arch" && value.rfind("sm_", 0) == 0 && value.size() > 3) {
      t.arch = value;
    } else if (t.kind == Kind::cuda && key == "-max-threads-per-block") {
      t.max_threads_per_block = positiveInt(value, key);
    } else {
      throw Error("target: unknown or malformed option '" + opt + "' for " + kind +
                  (t.kind == Kind::llvm ? " (known: -mcpu=NAME, -num-cores=N, -vector-bits=N)"
                                        : " (known: -arch=sm_XX, -max-threads-per-block=N)"));
    }
  }
  return t;
}

std::string Target::str() const {
  if (kind == Kind::cuda) return "cuda -arch=" + arch;
  std::string s = "llvm";
  if (!mcpu.empty()) s += " -mcpu=" + mcpu;
  return s + " -num-cores=" + std::to_string(num_cores) + " -vector-bits=" + std::to_string(vector_bits);
}

std::vector<std::string> ruleNames(Target::Kind kind) {
  std::vector<std::string> names;
  for (const auto& r : kind == Target::Kind::llvm ? llvmRules() : cudaRules()) names.emplace_back(r.name);
  return names;
}

std::vector<RuleReport> applyDefaultRules(ir::Module& m, const Target& target, uint64_t seed) {
  const auto& rules = target.kind == Target::Kind::llvm ? llvmRules() : cudaRules();
  std::vector<RuleReport> report;
  for (auto& f : m.functions) {
    auto* prim = std::get_if<ir::PrimFunc>(&f);
    if (!prim) continue;
    if (!prim->trace.empty()) {
      report.push_back({prim->name, "already scheduled"});
      continue;
    }
    std::string used = "none";
    for (const auto& rule : rules) {
      Schedule sch(*prim, seed);
      if (rule.apply(sch, target)) {
        *prim = sch.func();
        used = rule.name;
        break;
      }
    }
    report.push_back({prim->name, used});
  }
  return report;
}

}  // namespace mlcc::schedule
