// The CPU emulation of generated CUDA C (see cuda_emulator.h): the header
// it is compiled under, the compile, and the launch.
#include "mlcc/host/cuda_emulator.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "mlcc/host/process.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::host {

namespace {

// Prepended to the generated source. Fibers are ucontext contexts with
// their own stacks; a barrier returns to the block's scheduler.
constexpr const char* kEmulationHeader = R"(#define MLCC_CUDA_EMULATION 1
#include <math.h>
#include <string.h>
#include <ucontext.h>
#include <cstdio>
#include <vector>
#include <functional>
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
namespace mlcc_emu {
inline dim3 t_thread, t_block, t_block_dim, t_grid_dim;
struct Block {
  std::vector<ucontext_t> fibers;
  std::vector<int> state;  // 0 runnable, 1 at a barrier, 2 done
  std::vector<unsigned long long> exchange;  // the values of a warp shuffle, by thread
  ucontext_t scheduler;
  int current = 0;
  const std::function<void()>* body = nullptr;
};
inline Block* t_block_state = nullptr;
inline const char* t_error = nullptr;
inline int t_reverse = 0;
inline void fiberMain() {
  Block* b = t_block_state;
  (*b->body)();
  b->state[b->current] = 2;
  swapcontext(&b->fibers[b->current], &b->scheduler);
}
inline void syncthreads() {
  Block* b = t_block_state;
  b->state[b->current] = 1;
  swapcontext(&b->fibers[b->current], &b->scheduler);
}
// __shfl_xor_sync: every thread of the block passes its value at a barrier
// (the generated code shuffles where all threads do) and takes its
// partner's, lane ^ lane_mask of its warp, which must be in `mask`.
template <typename T> inline T shflXor(unsigned mask, T v, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffled value fits 8 bytes");
  Block* b = t_block_state;
  const int me = b->current, lane = me % 32, partner = me - lane + (lane ^ lane_mask);
  memcpy(&b->exchange[me], &v, sizeof(T));
  syncthreads();
  T r = v;
  if (!(mask >> lane & 1u) || lane_mask < 0 || lane_mask >= 32 || partner >= (int)b->exchange.size() ||
      !(mask >> (partner % 32) & 1u))
    t_error = "__shfl_xor_sync from a lane outside the mask or the block";
  else
    memcpy(&r, &b->exchange[partner], sizeof(T));
  syncthreads();
  return r;
}
inline void launch(dim3 grid, dim3 block, const std::function<void()>& body) {
  const int n = (int)(block.x * block.y * block.z);
  const size_t stack_bytes = 256 * 1024;
  std::vector<char> stacks((size_t)n * stack_bytes);
  Block b;
  b.body = &body;
  b.fibers.resize(n);
  b.state.resize(n);
  b.exchange.resize(n);
  t_block_state = &b;
  t_grid_dim = grid;
  t_block_dim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        t_block = dim3(bx, by, bz);
        for (int i = 0; i < n; ++i) {
          getcontext(&b.fibers[i]);
          b.fibers[i].uc_stack.ss_sp = stacks.data() + (size_t)i * stack_bytes;
          b.fibers[i].uc_stack.ss_size = stack_bytes;
          b.fibers[i].uc_link = nullptr;
          makecontext(&b.fibers[i], fiberMain, 0);
          b.state[i] = 0;
        }
        for (;;) {
          for (int k = 0; k < n; ++k) {
            const int i = t_reverse ? n - 1 - k : k;
            if (b.state[i] == 2) continue;
            b.current = i;
            t_thread = dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
            swapcontext(&b.scheduler, &b.fibers[i]);
          }
          int at_barrier = 0, done = 0;
          for (int i = 0; i < n; ++i) {
            at_barrier += b.state[i] == 1;
            done += b.state[i] == 2;
          }
          if (done == n) break;
          if (done > 0) {
            t_error = "__syncthreads() reached by some threads of a block and not by others";
            return;
          }
          for (int i = 0; i < n; ++i)
            if (b.state[i] == 1) b.state[i] = 0;
        }
      }
}
}  // namespace mlcc_emu
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() mlcc_emu::syncthreads()
#define __shfl_xor_sync(mask, v, lane_mask) mlcc_emu::shflXor(mask, v, lane_mask)
#define threadIdx mlcc_emu::t_thread
#define blockIdx mlcc_emu::t_block
#define blockDim mlcc_emu::t_block_dim
#define gridDim mlcc_emu::t_grid_dim
extern "C" const char* mlcc_emu_take_error() { const char* e = mlcc_emu::t_error; mlcc_emu::t_error = nullptr; return e; }
extern "C" void mlcc_emu_set_reverse(int r) { mlcc_emu::t_reverse = r; }
)";

}  // namespace

struct CudaEmulator::Impl {
  void* handle = nullptr;
  std::filesystem::path dir;
  ~Impl() {
    if (handle) dlclose(handle);
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

CudaEmulator::CudaEmulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaEmulator::~CudaEmulator() = default;
CudaEmulator::CudaEmulator(CudaEmulator&&) noexcept = default;
CudaEmulator& CudaEmulator::operator=(CudaEmulator&&) noexcept = default;

CudaEmulator CudaEmulator::compile(const std::string& code) {
  auto impl = std::make_unique<Impl>();
  std::string tmpl = (std::filesystem::temp_directory_path() / "mlcc-cuda-emu-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary directory for the CUDA emulation");
  impl->dir = tmpl;
  const std::string src = (impl->dir / "kernels.cpp").string(), so = (impl->dir / "kernels.so").string();
  writeOutputAtomic(src, std::string(kEmulationHeader) + code);
  const char* cxx = std::getenv("CXX");
  ProcessResult r =
      runProcess({cxx && *cxx ? cxx : "c++", "-std=c++17", "-O1", "-w", "-fPIC", "-shared", src, "-o", so});
  if (r.exit_code != 0)
    throw Error("the CUDA emulation could not compile the generated CUDA C (a bug in mlcc):\n" + r.output);
  impl->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!impl->handle) throw Error(std::string("cannot load the CUDA emulation: ") + dlerror());
  return CudaEmulator(std::move(impl));
}

void CudaEmulator::launch(const std::string& name, const std::vector<void*>& params, Order order) const {
  auto fn = reinterpret_cast<void (*)(void**)>(dlsym(impl_->handle, ("mlcc_emu_launch_" + name).c_str()));
  if (!fn) throw Error("the CUDA emulation has no kernel " + name);
  auto set_reverse = reinterpret_cast<void (*)(int)>(dlsym(impl_->handle, "mlcc_emu_set_reverse"));
  auto take_error = reinterpret_cast<const char* (*)()>(dlsym(impl_->handle, "mlcc_emu_take_error"));
  set_reverse(order == Order::reverse);
  std::vector<void*> p = params;
  fn(p.data());
  if (const char* e = take_error()) throw Error("kernel " + name + ": " + e);
}

}  // namespace mlcc::host
