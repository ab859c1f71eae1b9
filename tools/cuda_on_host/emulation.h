// The CUDA the project's kernels use, on the host (tools/cuda_on_host): a kernel's blocks
// run one after another, and a block's threads one after another too. A kernel with
// __syncthreads runs each thread as a fiber (a stack of its own, entered through a ucontext)
// on the calling OS thread: every thread runs up to its next barrier, then the next thread
// does, so no thread passes a barrier before all have reached it. A switch at a barrier is
// _setjmp/_longjmp, which save no signal mask (swapcontext's system call per switch cost
// more than the kernels' work in a block with many barriers). One OS thread whatever the block
// size: the emulation's cost is the kernels' work, not the scheduler's. Shared memory is a
// static variable: one block at a time uses it. Nothing here is GPU behaviour beyond what
// a correct kernel may rely on: barriers, shared memory, the index built-ins.
//
// A stream can capture (CUDA graphs): a launch on a capturing stream copies its argument
// bytes into a record and runs nothing, as the driver records a launch into a graph; the
// emulated CuPy's Graph replays the records in order (see Stream and record below).
// glibc's fortified longjmp refuses a jump to another stack, which is what a fiber switch is
#undef _FORTIFY_SOURCE
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>
#include <math.h>
#include <setjmp.h>
#include <ucontext.h>

// glibc's tanhf, within 2 ulp as CUDA's, measured 2.02 by the accuracy test's yardstick:
// widened to double it is within 1, so that test measures the kernels, not the host's libm
#define tanhf(x) ((float)tanh((double)(x)))

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__

struct dim3 { unsigned x = 1, y = 1, z = 1; };
static dim3 blockIdx, blockDim, gridDim;
static dim3 threadIdx;

namespace on_host {
// the fibers of the block being run (see launch): where the scheduler resumes, and where
// the running thread resumes after its barrier
static jmp_buf scheduler;
static jmp_buf* running_fiber = nullptr;
}  // namespace on_host

// a thread at a barrier hands the OS thread back to the scheduler, which resumes it once
// every other thread of the block has reached the barrier too
inline void __syncthreads() {
  if (on_host::running_fiber && !_setjmp(*on_host::running_fiber)) _longjmp(on_host::scheduler, 1);
}
// CUDA's compare-and-swap: one thread runs at a time here (blocks in turn, a block's
// threads as fibers that switch only at barriers), so a plain read and write is atomic
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                    unsigned long long val) {
  const unsigned long long old = *address;
  if (old == compare) *address = val;
  return old;
}
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

constexpr std::size_t FIBER_STACK = 64 * 1024;  // bytes per thread: the kernels' locals are small
static bool fiber_exited = false;  // set by a thread's last act, read by the scheduler

// a block's thread as a fiber's entry point (makecontext passes no pointers): the launch
// stores the kernel and its arguments here first
template <typename... P>
struct Fiber {
  static inline void (*kernel)(P...) = nullptr;
  static inline void** args = nullptr;
  static void entry() {
    call(kernel, args, std::index_sequence_for<P...>{});
    fiber_exited = true;
    _longjmp(scheduler, 1);  // never returns: the fiber's stack is reused by the next block
  }
};

struct Resume {
  jmp_buf at;  // a thread's place at its barrier
};

template <typename... P>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, void** args, bool barriers) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  auto index = [&](unsigned t) {
    return dim3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
  };
  // the fibers' stacks, kept from launch to launch (malloc's pages are touched only as used)
  static char* stacks = nullptr;
  static unsigned stack_count = 0;
  if (barriers && stack_count < threads) {
    std::free(stacks);
    stacks = static_cast<char*>(std::malloc(threads * FIBER_STACK));
    stack_count = threads;
  }
  std::vector<ucontext_t> fibers(barriers ? threads : 0);  // each thread's start
  std::vector<Resume> resume(barriers ? threads : 0);
  std::vector<char> done(threads), started(threads);
  ucontext_t blank;
  if (barriers) getcontext(&blank);
  Fiber<P...>::kernel = kernel;
  Fiber<P...>::args = args;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIdx = dim3{x, y, z};
        if (!barriers) {
          for (unsigned t = 0; t < threads; t++) {
            threadIdx = index(t);
            call(kernel, args, std::index_sequence_for<P...>{});
          }
          continue;
        }
        for (unsigned t = 0; t < threads; t++) {
          fibers[t] = blank;
          fibers[t].uc_stack.ss_sp = stacks + t * FIBER_STACK;
          fibers[t].uc_stack.ss_size = FIBER_STACK;
          fibers[t].uc_link = nullptr;  // a thread's entry jumps back to the scheduler itself
          makecontext(&fibers[t], Fiber<P...>::entry, 0);
          done[t] = started[t] = 0;
        }
        // rounds: each live thread runs to its next barrier (or its end); the next round
        // starts when all have, so every barrier sees the whole block arrive
        for (unsigned live = threads; live;) {
          for (unsigned t = 0; t < threads; t++) {
            if (done[t]) continue;
            threadIdx = index(t);
            running_fiber = &resume[t].at;
            fiber_exited = false;
            if (!_setjmp(scheduler)) {  // a thread comes back here at its barrier or its end
              if (started[t]) _longjmp(resume[t].at, 1);
              started[t] = 1;
              setcontext(&fibers[t]);
            }
            if (fiber_exited) {
              done[t] = 1;
              live--;
            }
          }
        }
        running_fiber = nullptr;
      }
}

// what an emulated stream's handle points at (the emulated CuPy's Stream owns it): while
// `record` is set the stream is capturing, and each launch on it is handed to `record`
// (the kernel's handle, the grid and block, its arguments' bytes and each one's offset in
// them) instead of being run
struct Stream {
  void (*record)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                 const unsigned char* bytes, const unsigned* offsets, unsigned count);
};

// a capturing launch: its arguments' bytes copied as the kernel's parameter types lay them
// out (each at its alignment), so that the record outlives the caller's argument buffer,
// as the driver copies a captured launch's parameters into the graph
template <typename... P, std::size_t... I>
void record(void (*)(P...), void* f, dim3 grid, dim3 block, void** args, const Stream* stream,
            std::index_sequence<I...>) {
  constexpr unsigned count = sizeof...(P);
  const std::size_t sizes[] = {sizeof(P)..., 0}, aligns[] = {alignof(P)..., 1};
  unsigned offsets[count + 1];
  std::size_t at = 0;
  for (unsigned i = 0; i < count; i++) {
    at = (at + aligns[i] - 1) / aligns[i] * aligns[i];
    offsets[i] = (unsigned)at;
    at += sizes[i];
  }
  offsets[count] = (unsigned)at;
  std::vector<unsigned char> bytes(at + 1);
  (std::memcpy(bytes.data() + offsets[I], args[I], sizeof(P)), ...);
  stream->record(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, bytes.data(), offsets, count);
}

// a module's kernel on a stream: recorded when the stream captures, else run
template <typename... P>
void launch_on(void (*kernel)(P...), void* f, dim3 grid, dim3 block, void** args, bool barriers,
               const Stream* capturing) {
  if (capturing)
    record(kernel, f, grid, block, args, capturing, std::index_sequence_for<P...>{});
  else
    launch(kernel, grid, block, args, barriers);
}

// what the driver's cuLaunchKernel does with a launch, on the host: the same checks of the
// grid and block (CUDA_ERROR_INVALID_VALUE, 1, past CUDA's limits), then the kernel behind
// the handle `f` (its module's stagegrad_kernel) run to the end, or recorded where
// `stream` captures; CUDA_SUCCESS, 0
inline int launch_kernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared_bytes, void* stream, void** params, void** extra) {
  const unsigned long long threads = (unsigned long long)bx * by * bz;
  if (f == nullptr || params == nullptr || extra != nullptr) return 1;
  if (!gx || !gy || !gz || !threads || threads > 1024 || bz > 64 || gx > 2147483647u || gy > 65535 ||
      gz > 65535)
    return 1;
  const Stream* s = static_cast<const Stream*>(stream);
  reinterpret_cast<void (*)(dim3, dim3, void**, const Stream*)>(f)(
      dim3{gx, gy, gz}, dim3{bx, by, bz}, params, s != nullptr && s->record != nullptr ? s : nullptr);
  return 0;
}

}  // namespace on_host
