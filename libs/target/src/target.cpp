// Target::parse and Target::str (see target.h): the one parser of --target
// strings, "llvm [-mcpu=CPU] [-mattr=+a,-b] [-num-cores=N] [-vector-bits=N] [-parallel-grain=N]"
// and "cuda [-arch=sm_XX] [-max-threads-per-block=N] [-fast-math]". An option given twice
// takes its last value.
#include "mlcc/target/target.h"

#include <optional>
#include <sstream>

namespace mlcc::target {

namespace {

constexpr const char* kLlvmOptions =
    "-mcpu=CPU, -mattr=+F,-G, -num-cores=N, -vector-bits=N, -parallel-grain=N";
constexpr const char* kCudaOptions = "-arch=sm_XX, -max-threads-per-block=N, -fast-math";
constexpr const char* kDefaultArch = "sm_80";

int positiveInt(const std::string& text, const std::string& option, const SourceLoc& where) {
  try {
    size_t used = 0;
    int v = std::stoi(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw Error(where, option + " must be a positive integer, not '" + text + "'");
}

// -vector-bits: whole f32 lanes, a power of two from one lane (32) to 2048
// bits, so that the rules' lane counts divide evenly.
int vectorBits(const std::string& text, const SourceLoc& where) {
  const int v = positiveInt(text, "-vector-bits", where);
  if (v < 32 || v > 2048 || (v & (v - 1)) != 0)
    throw Error(where, "-vector-bits must be a power of two from 32 to 2048, not " + text);
  return v;
}

// The options as written, before they are resolved.
struct Options {
  std::string mcpu, mattr, arch = kDefaultArch;
  std::optional<int> num_cores, vector_bits, max_threads_per_block, parallel_grain;
  bool fast_math = false;
};

Options readOptions(std::istringstream& in, Target::Kind kind, const std::string& kind_name,
                    const SourceLoc& where) {
  Options o;
  const bool llvm = kind == Target::Kind::llvm;
  for (std::string opt; in >> opt;) {
    const auto eq = opt.find('=');
    const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (llvm && key == "-mcpu" && !value.empty())
      o.mcpu = value;
    else if (llvm && key == "-mattr" && !value.empty())
      o.mattr = value;
    else if (llvm && key == "-num-cores")
      o.num_cores = positiveInt(value, key, where);
    else if (llvm && key == "-vector-bits")
      o.vector_bits = vectorBits(value, where);
    else if (llvm && key == "-parallel-grain")
      o.parallel_grain = positiveInt(value, key, where);
    else if (!llvm && key == "-arch" && !value.empty())
      o.arch = value;
    else if (!llvm && key == "-max-threads-per-block")
      o.max_threads_per_block = positiveInt(value, key, where);
    else if (!llvm && opt == "-fast-math")
      o.fast_math = true;
    else
      throw Error(where, "unknown or malformed option '" + opt + "' for " + kind_name +
                             " (known: " + (llvm ? kLlvmOptions : kCudaOptions) + ")");
  }
  return o;
}

}  // namespace

Target Target::parse(const std::string& text, const SourceLoc& where) {
  std::istringstream in(text);
  std::string kind;
  in >> kind;
  Target t;
  if (kind == "llvm")
    t.kind = Kind::llvm;
  else if (kind == "cuda")
    t.kind = Kind::cuda;
  else
    throw Error(where, "unknown target '" + kind + "' (expected llvm or cuda, e.g. \"llvm -num-cores=2\")");
  const Options o = readOptions(in, t.kind, kind, where);
  try {
    if (t.kind == Kind::llvm) {
      t.mcpu = o.mcpu;
      t.mattr = o.mattr;
      t.cpu = describeCpu(o.mcpu, o.mattr);
      t.vector_bits = o.vector_bits.value_or(t.cpu.vector_bits);
      t.num_cores = o.num_cores.value_or(t.cpu.cores);
      t.parallel_grain = o.parallel_grain.value_or(kDefaultParallelGrain);
    } else {
      t.arch = o.arch;
      t.gpu = describeGpu(o.arch);
      t.max_threads_per_block = o.max_threads_per_block.value_or(t.gpu.max_threads_per_block);
      if (t.max_threads_per_block > t.gpu.max_threads_per_block)
        throw Error("-max-threads-per-block=" + std::to_string(t.max_threads_per_block) + " is over " +
                    t.arch + "'s limit of " + std::to_string(t.gpu.max_threads_per_block));
      t.max_shared_memory_bytes = t.gpu.max_shared_memory_bytes;
      t.fast_math = o.fast_math;
    }
  } catch (const Error& e) {
    if (!e.loc().file.empty()) throw;
    throw Error(where, e.message());
  }
  return t;
}

std::string Target::str() const {
  if (kind == Kind::cuda) {
    std::string s = "cuda -arch=" + arch;
    if (max_threads_per_block != gpu.max_threads_per_block)
      s += " -max-threads-per-block=" + std::to_string(max_threads_per_block);
    if (fast_math) s += " -fast-math";
    return s;
  }
  std::string s = "llvm";
  if (!mcpu.empty()) s += " -mcpu=" + mcpu;
  if (!mattr.empty()) s += " -mattr=" + mattr;
  s += " -num-cores=" + std::to_string(num_cores) + " -vector-bits=" + std::to_string(vector_bits);
  if (parallel_grain != kDefaultParallelGrain) s += " -parallel-grain=" + std::to_string(parallel_grain);
  return s;
}

}  // namespace mlcc::target
