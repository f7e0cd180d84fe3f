#include "pd/ops/dispatch.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace pd {
namespace {

struct Forced {
  bool set = false;
  Backend backend = Backend::reference;
};

Forced initial_forced() {
  Forced f;
  const char* env = std::getenv("PD_KERNELS");
  if (env == nullptr || *env == '\0') return f;
  if (std::strcmp(env, "reference") == 0) {
    f.set = true;
  } else if (std::strcmp(env, "onednn") == 0) {
    f.set = true;
    f.backend = Backend::onednn;
  } else if (std::strcmp(env, "auto") != 0) {
    raise(ErrorCode::kInvalidArgument, "PD_KERNELS='{}': expected reference, onednn or auto", env);
  }
  return f;
}

// Per thread: a ScopedKernelBackend (a test, pd-bench --mode check, exec::compile binding the kernels
// of a target without oneDNN) affects the calls of its own thread, not a data loader's running beside
// it. Every thread starts from PD_KERNELS, read once.
Forced& forced() {
  static const Forced from_env = initial_forced();
  thread_local Forced f = from_env;
  return f;
}

}  // namespace

void set_forced_backend(const Backend* backend) {
  forced().set = backend != nullptr;
  if (backend) forced().backend = *backend;
}

const Backend* forced_backend() { return forced().set ? &forced().backend : nullptr; }

bool backend_allowed(Backend b, Place place) {
  if (place.is_cpu() != (b != Backend::cuda)) return false;
  if (b == Backend::cuda) return true;
  // A forced CPU backend still falls back to reference where the forced one has no kernel.
  if (forced().set && forced().backend == Backend::reference) return b == Backend::reference;
  return true;
}

ScopedKernelBackend::ScopedKernelBackend(Backend b) : had_prev_(forced().set), prev_(forced().backend), cur_(b) {
  set_forced_backend(&cur_);
}

ScopedKernelBackend::~ScopedKernelBackend() { set_forced_backend(had_prev_ ? &prev_ : nullptr); }

}  // namespace pd

#include "pd/ops/op_observer.h"

namespace pd {

OpObserver*& current_op_observer() {
  thread_local OpObserver* observer = nullptr;
  return observer;
}

}  // namespace pd
