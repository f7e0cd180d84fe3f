// Kernel selection: (op, backend, dtype) tables are generated into registry.cc; this header holds the
// rules. On CPU the oneDNN kernel is preferred where one exists, unless reference kernels are forced:
//
//   PD_KERNELS=reference ./pd-train ...             // environment switch
//   { pd::ScopedKernelBackend ref(pd::Backend::reference); run(); }   // API switch (tests)
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "pd/core/backend.h"
#include "pd/core/dtype.h"
#include "pd/core/error.h"
#include "pd/core/place.h"

namespace pd {

struct KernelKey {
  Backend backend;
  DType dtype;
};

template <typename Fn>
struct KernelEntry {
  Backend backend;
  DType dtype;
  Fn fn;
};

// The backend forced for the calling thread's CPU kernels, or none (= prefer the fastest available).
void set_forced_backend(const Backend* backend);
const Backend* forced_backend();
bool backend_allowed(Backend b, Place place);

class ScopedKernelBackend {
 public:
  explicit ScopedKernelBackend(Backend b);
  ~ScopedKernelBackend();

 private:
  bool had_prev_;
  Backend prev_;
  Backend cur_;
};

template <typename Fn, size_t N>
Fn select_kernel(const char* op, const KernelEntry<Fn> (&table)[N], DType dtype, Place place) {
  for (const auto& e : table)
    if (e.dtype == dtype && backend_allowed(e.backend, place)) return e.fn;
  std::vector<std::string> have;
  for (const auto& e : table)
    if (backend_allowed(e.backend, place)) have.push_back(dtype_name(e.dtype));
  raise(ErrorCode::kNotImplemented, "{}: no kernel for dtype {} on {} (kernels exist for: {})", op, dtype_name(dtype),
        place.str(), fmt::join(have, ", "));
}

}  // namespace pd
