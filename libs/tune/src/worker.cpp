// The measuring worker (`mlcc-tune worker`, workerMain): reads the requests
// of worker_protocol.h from a pipe and answers each. It JIT-compiles the
// reference (with bounds checks) and the candidates, checks a candidate's
// every parameter buffer against the reference's after one run on the same
// random inputs, and times it. A candidate that crashes or hangs takes the
// worker down with it; the Runner replaces the worker.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mlcc/codegen/llvm.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/tune/runner.h"
#include "worker_protocol.h"

namespace mlcc::tune {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A failed request: the reply's status and message.
struct Failure {
  std::string_view status;
  std::string message;
};

// One parameter of the measured prim func (constant shape).
struct Param {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  int64_t count = 0;  // elements
  size_t bytes = 0;
};

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using Memory = std::unique_ptr<std::byte[], FreeDeleter>;

// Each buffer has this much room after it, so that the timed samples can
// place it at different 64-byte offsets (placement()).
constexpr size_t kPlacementSlack = 4096;

// The byte offset of parameter `param` in sample `sample`: 0 for the
// checked run (sample 0), else spread over a 4 KiB page, differently per
// parameter, so that a schedule fast only at one relative placement of its
// buffers (cache-set aliasing of power-of-two rows) is not timed only there.
size_t placement(int sample, size_t param) {
  if (sample == 0) return 0;
  return (static_cast<size_t>(sample) * (2 * param + 5) * 7 + param * 13) % (kPlacementSlack / 64) * 64;
}

Memory allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p) throw Error("out of memory for a " + std::to_string(bytes) + "-byte buffer");
  return Memory(static_cast<std::byte*>(p));
}

// The prim func of a module holding exactly one.
ir::PrimFunc onlyPrimFunc(const std::string& text, const std::string& what) {
  ir::Module m = ir::parseModule(text, what);
  if (m.functions.size() != 1 || !std::holds_alternative<ir::PrimFunc>(m.functions[0]))
    throw Error(what + ": expected a module holding one prim func");
  return std::get<ir::PrimFunc>(m.functions[0]);
}

std::vector<Param> signature(const ir::PrimFunc& f) {
  std::vector<Param> params;
  for (const ir::Buffer& b : f.params) {
    Param p{b->name, b->dtype, {}, 1, 0};
    for (const ir::PrimExpr& d : b->shape) {
      int64_t n;
      if (!ir::asConstInt(d, &n) || n < 0)
        throw Error("prim func @" + f.name + ": parameter %" + b->name +
                    " has a symbolic shape; only functions of constant shapes can be measured");
      p.shape.push_back(n);
      const std::optional<int64_t> count = checkedMul(p.count, n);
      if (!count) throw Error("prim func @" + f.name + ": parameter %" + b->name + " is too large");
      p.count = *count;
    }
    const std::optional<int64_t> bytes = checkedMul(p.count, ir::dtypeBytes(b->dtype));
    if (!bytes) throw Error("prim func @" + f.name + ": parameter %" + b->name + " is too large");
    p.bytes = static_cast<size_t>(*bytes);
    params.push_back(std::move(p));
  }
  return params;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// splitmix64: a small, fast generator whose sequence is the same everywhere.
uint64_t nextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Random contents of a parameter: floats uniform in [-1, 1], integers in
// 0..3 (small, so that index buffers mostly stay in bounds), bools 0/1.
void fillRandom(const Param& p, uint64_t seed, size_t index, std::byte* out) {
  uint64_t state = seed ^ (0xd1b54a32d192ed03ULL * (index + 1));
  for (int64_t i = 0; i < p.count; ++i) {
    const uint64_t r = nextRandom(state);
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    switch (p.dtype) {
      case ir::DType::f32: {
        const float v = static_cast<float>(u);
        std::memcpy(out + i * 4, &v, 4);
        break;
      }
      case ir::DType::f64: std::memcpy(out + i * 8, &u, 8); break;
      case ir::DType::f16: {
        const uint16_t v = ir::detail::doubleToHalfBits(u);
        std::memcpy(out + i * 2, &v, 2);
        break;
      }
      case ir::DType::bf16: {
        const uint16_t v = ir::detail::doubleToBF16Bits(u);
        std::memcpy(out + i * 2, &v, 2);
        break;
      }
      case ir::DType::i8:
      case ir::DType::u8: out[i] = static_cast<std::byte>(r % 4); break;
      case ir::DType::i16:
      case ir::DType::u16: {
        const uint16_t v = static_cast<uint16_t>(r % 4);
        std::memcpy(out + i * 2, &v, 2);
        break;
      }
      case ir::DType::i32:
      case ir::DType::u32: {
        const int32_t v = static_cast<int32_t>(r % 4);
        std::memcpy(out + i * 4, &v, 4);
        break;
      }
      case ir::DType::i64: {
        const int64_t v = static_cast<int64_t>(r % 4);
        std::memcpy(out + i * 8, &v, 8);
        break;
      }
      case ir::DType::boolean: out[i] = static_cast<std::byte>(r & 1); break;
    }
  }
}

// The tolerance of a float dtype: |got - want| <= rtol * |want| + atol * M,
// M the largest finite magnitude of the expected buffer.
struct Tolerance {
  double rtol, atol;
};
Tolerance toleranceOf(ir::DType t) {
  switch (t) {
    case ir::DType::f16: return {1e-2, 1e-2};
    case ir::DType::bf16: return {5e-2, 5e-2};
    case ir::DType::f64: return {1e-9, 1e-10};  // reassociated double sums
    default: return {1e-3, 1e-4};
  }
}

std::string valueText(ir::DType t, double v) {
  return ir::isFloat(t) ? ir::formatFloat(v, t) : std::to_string(static_cast<int64_t>(v));
}

std::string indexText(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shapeText(idx);
}

// Compares a candidate's buffer with the reference's; the first element that
// differs (and how many do), or nullopt when they match.
std::optional<std::string> compare(const Param& p, const std::byte* got, const std::byte* want) {
  int64_t first = -1, bad = 0;
  double tolerance_at_first = 0;
  if (ir::isFloat(p.dtype)) {
    const Tolerance tol = toleranceOf(p.dtype);
    double magnitude = 0;
    for (int64_t i = 0; i < p.count; ++i)
      if (const double w = ir::elementAt(p.dtype, want, i); std::isfinite(w))
        magnitude = std::max(magnitude, std::fabs(w));
    for (int64_t i = 0; i < p.count; ++i) {
      const double g = ir::elementAt(p.dtype, got, i), w = ir::elementAt(p.dtype, want, i);
      bool ok;
      double limit = 0;
      if (std::isnan(w) || std::isnan(g)) {
        ok = std::isnan(w) && std::isnan(g);
      } else if (std::isinf(w) || std::isinf(g)) {
        ok = g == w;
      } else {
        limit = tol.rtol * std::fabs(w) + tol.atol * magnitude;
        ok = std::fabs(g - w) <= limit;
      }
      if (!ok && bad++ == 0) {
        first = i;
        tolerance_at_first = limit;
      }
    }
  } else {
    const int width = ir::dtypeBytes(p.dtype);
    for (int64_t i = 0; i < p.count; ++i)
      if (std::memcmp(got + i * width, want + i * width, width) != 0 && bad++ == 0) first = i;
  }
  if (bad == 0) return std::nullopt;
  std::string msg = "%" + p.name + indexText(p.shape, first) + " is " +
                    valueText(p.dtype, ir::elementAt(p.dtype, got, first)) + ", expected " +
                    valueText(p.dtype, ir::elementAt(p.dtype, want, first));
  if (ir::isFloat(p.dtype) && tolerance_at_first > 0) {
    char tol[32];
    std::snprintf(tol, sizeof tol, "%.3g", tolerance_at_first);
    msg += std::string(" (tolerance ") + tol + ")";
  }
  msg += "; " + std::to_string(bad) + " of " + std::to_string(p.count) + " elements differ";
  return msg;
}

// An error's message without a repeated function name (JitKernel::run puts
// "prim func @f: " before run-time errors that start "prim func @f, block").
std::string tidy(std::string message) {
  constexpr std::string_view kFunc = "prim func @";
  if (message.starts_with(kFunc))
    if (const size_t colon = message.find(": ");
        colon != std::string::npos && std::string_view(message).substr(colon + 2).starts_with(kFunc))
      message.erase(0, colon + 2);
  return message;
}

class Worker {
 public:
  json handle(const json& req) {
    const std::string op = req.value("op", "");
    try {
      if (op == protocol::kReference) return reference(req);
      if (op == protocol::kBuild) return build(req);
      if (op == protocol::kMeasure) return measure(req);
      if (op == protocol::kDrop) return drop(req);
      return failure(protocol::kStatusRunError, "unknown request '" + op + "'");
    } catch (const Failure& f) {
      return failure(f.status, f.message);
    } catch (const Error& e) {
      return failure(op == protocol::kBuild ? protocol::kStatusBuildError : protocol::kStatusRunError,
                     tidy(e.message()));
    } catch (const std::exception& e) {
      return failure(op == protocol::kBuild ? protocol::kStatusBuildError : protocol::kStatusRunError,
                     e.what());
    }
  }

 private:
  static json failure(std::string_view status, const std::string& message) {
    return {{"status", status}, {"error", message}};
  }

  json reference(const json& req) {
    kernels_.clear();
    params_.clear();
    initial_.clear();
    expected_.clear();
    work_.clear();
    ready_ = false;
    options_ = {};
    options_.mcpu = req.at("mcpu").get<std::string>();
    options_.mattr = req.at("mattr").get<std::string>();
    options_.num_threads = std::max(1, req.at("num_threads").get<int>());
    const uint64_t seed = req.at("seed").get<uint64_t>();

    const ir::PrimFunc f = onlyPrimFunc(req.at("module").get<std::string>(), "<reference>");
    std::vector<Param> params = signature(f);
    codegen::LLVMOptions checked = options_;
    checked.bounds_check = true;
    checked.num_threads = 1;
    std::optional<codegen::JitKernel> kernel;
    try {
      kernel.emplace(codegen::JitKernel::compile(f, checked));
    } catch (const Error& e) {
      throw Failure{protocol::kStatusBuildError, tidy(e.message())};
    }
    std::vector<Memory> work;
    std::vector<std::vector<std::byte>> initial, expected;
    std::vector<void*> args;
    for (size_t i = 0; i < params.size(); ++i) {
      work.push_back(allocate(params[i].bytes + kPlacementSlack));
      fillRandom(params[i], seed, i, work.back().get());
      initial.emplace_back(work.back().get(), work.back().get() + params[i].bytes);
      args.push_back(work.back().get());
    }
    kernel->run(args);  // an Error (an access out of bounds) is a run_error
    for (size_t i = 0; i < params.size(); ++i)
      expected.emplace_back(work[i].get(), work[i].get() + params[i].bytes);
    params_ = std::move(params);
    work_ = std::move(work);
    initial_ = std::move(initial);
    expected_ = std::move(expected);
    ready_ = true;
    return {{"status", protocol::kStatusOk}};
  }

  void requireReference() const {
    if (!ready_) throw Failure{protocol::kStatusRunError, "no reference has been set"};
  }

  json build(const json& req) {
    requireReference();
    const int64_t id = req.at("id").get<int64_t>();
    const auto start = Clock::now();
    const ir::PrimFunc f = onlyPrimFunc(req.at("module").get<std::string>(), "<candidate>");
    const std::vector<Param> params = signature(f);
    if (params.size() != params_.size())
      throw Failure{protocol::kStatusBuildError,
                    "prim func @" + f.name + " has " + std::to_string(params.size()) +
                        " parameters, the reference " + std::to_string(params_.size())};
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].dtype != params_[i].dtype || params[i].shape != params_[i].shape)
        throw Failure{protocol::kStatusBuildError,
                      "prim func @" + f.name + ": parameter %" + params[i].name + " is " +
                          std::string(ir::dtypeName(params[i].dtype)) + shapeText(params[i].shape) +
                          ", the reference's %" + params_[i].name + " " +
                          std::string(ir::dtypeName(params_[i].dtype)) + shapeText(params_[i].shape)};
    kernels_.insert_or_assign(id, codegen::JitKernel::compile(f, options_));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return {{"status", protocol::kStatusOk}, {"build_ms", ms}};
  }

  // The kernel's arguments at a sample's placement, the inputs restored there.
  std::vector<void*> placeInputs(int sample) {
    std::vector<void*> args;
    for (size_t i = 0; i < params_.size(); ++i) {
      std::byte* at = work_[i].get() + placement(sample, i);
      std::memcpy(at, initial_[i].data(), params_[i].bytes);
      args.push_back(at);
    }
    return args;
  }

  json measure(const json& req) {
    requireReference();
    const int64_t id = req.at("id").get<int64_t>();
    const int repeats = std::max(1, req.at("repeats").get<int>());
    const double min_sample_s = std::max(0.0, req.at("min_sample_ms").get<double>()) / 1e3;
    auto it = kernels_.find(id);
    if (it == kernels_.end()) throw Failure{protocol::kStatusRunError, "no candidate " + std::to_string(id)};
    const codegen::JitKernel& kernel = it->second;
    std::vector<void*> args = placeInputs(0);
    auto start = Clock::now();
    kernel.run(args);
    const double check_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    for (size_t i = 0; i < params_.size(); ++i)
      if (auto diff = compare(params_[i], work_[i].get(), expected_[i].data()))
        throw Failure{protocol::kStatusWrongResult, *diff};
    const double give_up_us = req.value("give_up_us", 0.0);
    if (give_up_us > 0 && check_us > give_up_us)
      return {{"status", protocol::kStatusOk}, {"run_us", json::array({check_us})}};

    // The warm-up call, which also says how many calls make a sample.
    start = Clock::now();
    kernel.run(args);
    const double warm_s = std::chrono::duration<double>(Clock::now() - start).count();
    const double wanted = warm_s > 0 ? std::ceil(min_sample_s / warm_s) : 1e6;
    const int64_t calls = static_cast<int64_t>(std::clamp(wanted, 1.0, 1e9));
    json run_us = json::array();
    for (int r = 0; r < repeats; ++r) {
      args = placeInputs(r);
      start = Clock::now();
      for (int64_t c = 0; c < calls; ++c) kernel.run(args);
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      run_us.push_back(s * 1e6 / static_cast<double>(calls));
    }
    return {{"status", protocol::kStatusOk}, {"run_us", std::move(run_us)}};
  }

  json drop(const json& req) {
    kernels_.erase(req.at("id").get<int64_t>());
    return {{"status", protocol::kStatusOk}};
  }

  codegen::LLVMOptions options_;
  bool ready_ = false;
  std::vector<Param> params_;
  std::vector<Memory> work_;                       // the buffers the runs use
  std::vector<std::vector<std::byte>> initial_;    // the random inputs
  std::vector<std::vector<std::byte>> expected_;   // every parameter after the reference ran
  std::map<int64_t, codegen::JitKernel> kernels_;  // built candidates by id
};

// Exits the process when its parent goes away (the worker is reparented),
// so that a worker stuck in a candidate's endless loop does not outlive a
// tuner that was killed.
class OrphanWatch {
 public:
  OrphanWatch() : parent_(getppid()), thread_([this] { loop(); }) {}
  ~OrphanWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; }))
      if (getppid() != parent_) _exit(3);
  }
  const pid_t parent_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

bool writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int workerMain(int in_fd, int out_fd) {
  // Replies go to a private copy of out_fd; anything else printed to stdout
  // (by LLVM, say) goes to stderr instead of into the protocol.
  const int reply_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 3);
  if (reply_fd < 0) return 1;
  if (out_fd == STDOUT_FILENO) dup2(STDERR_FILENO, STDOUT_FILENO);
  OrphanWatch watch;
  Worker worker;
  std::string pending;
  char chunk[65536];
  for (;;) {
    size_t eol;
    while ((eol = pending.find('\n')) == std::string::npos) {
      const ssize_t n = ::read(in_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(reply_fd);
        return n == 0 && pending.empty() ? 0 : 1;
      }
      pending.append(chunk, static_cast<size_t>(n));
    }
    const json req = json::parse(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(eol), nullptr,
                                 /*allow_exceptions=*/false);
    pending.erase(0, eol + 1);
    const json reply = req.is_object()
                           ? worker.handle(req)
                           : json{{"status", protocol::kStatusRunError}, {"error", "malformed request"}};
    if (!writeAll(reply_fd, reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n")) {
      close(reply_fd);
      return 1;
    }
  }
}

}  // namespace mlcc::tune
