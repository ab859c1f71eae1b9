// The CUDA the project's kernels use, on the host (tools/cuda_on_host): a kernel's blocks
// run one after another; a block's threads run as OS threads that meet at a std::barrier
// for __syncthreads (or one after another, when the kernel has no barrier). Shared memory
// is a static variable: one block at a time uses it. Nothing here is GPU behaviour
// beyond what a correct kernel may rely on: barriers, shared memory, the index built-ins.
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>
#include <math.h>

// glibc's tanhf, within 2 ulp as CUDA's, measured 2.02 by the accuracy test's yardstick:
// widened to double it is within 1, so that test measures the kernels, not the host's libm
#define tanhf(x) ((float)tanh((double)(x)))

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 { unsigned x = 1, y = 1, z = 1; };
static dim3 blockIdx, blockDim, gridDim;
static thread_local dim3 threadIdx;
static std::barrier<>* block_barrier = nullptr;
inline void __syncthreads() { if (block_barrier) block_barrier->arrive_and_wait(); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
struct alignas(16) float4 { float x, y, z, w; };

namespace on_host {

// the kernel called with its arguments read from args[i], as cuLaunchKernel reads them
template <typename... P, std::size_t... I>
void call(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<P*>(args[I])...);
}

template <typename... P>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, void** args, bool barriers) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIdx = dim3{x, y, z};
        auto thread = [&](unsigned t) {
          threadIdx = dim3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
          call(kernel, args, std::index_sequence_for<P...>{});
          if (barriers) block_barrier->arrive_and_drop();  // an exited thread leaves the barrier
        };
        if (!barriers) {
          for (unsigned t = 0; t < threads; t++) thread(t);
          continue;
        }
        std::barrier<> bar(threads);
        block_barrier = &bar;
        std::vector<std::thread> running;
        for (unsigned t = 0; t < threads; t++) running.emplace_back(thread, t);
        for (auto& th : running) th.join();
        block_barrier = nullptr;
      }
}

// what the driver's cuLaunchKernel does with a launch, on the host: the same checks of the
// grid and block (CUDA_ERROR_INVALID_VALUE, 1, past CUDA's limits), then the kernel behind
// the handle `f` (its module's stagegrad_kernel) run to the end; CUDA_SUCCESS, 0
inline int launch_kernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared_bytes, void* stream, void** params, void** extra) {
  const unsigned long long threads = (unsigned long long)bx * by * bz;
  if (f == nullptr || params == nullptr || extra != nullptr) return 1;
  if (!gx || !gy || !gz || !threads || threads > 1024 || bz > 64 || gx > 2147483647u || gy > 65535 ||
      gz > 65535)
    return 1;
  reinterpret_cast<void (*)(dim3, dim3, void**)>(f)(dim3{gx, gy, gz}, dim3{bx, by, bz}, params);
  return 0;
}

}  // namespace on_host
