// Argument maps of a call's primitives kept between runs in the op's memo slot (an executor's op runs
// one call at a time), so that a run only points their memories at its buffers (set_data_handle). A
// dnnl::memory costs two aligned allocations to make, and a convolution made three or four of them and
// a map for each primitive on every call: most of the residual example's int8 time outside the
// primitives at batch 1 (docs/benchmarks.md, session 29).
#pragma once
#include <memory>
#include <unordered_map>
#include <vector>

#include "cpu/onednn/onednn_common.h"
#include "pd/core/allocator.h"
#include "pd/core/kernel_context.h"

namespace pd::kernels::onednn {

using ArgMap = std::unordered_map<int, dnnl::memory>;

template <typename Call>
struct KeptArgMaps {
  std::shared_ptr<const Call> call;  // what they were made for
  std::vector<ArgMap> maps;          // one per primitive of the call
};

// The maps kept for `call` (made by `make`, a function returning std::vector<ArgMap>, when the slot holds
// none or another call's), or null without a memo slot.
template <typename Call, typename Make>
ArgMap* kept_arg_maps(const KernelContext& ctx, const std::shared_ptr<const Call>& call, Make make) {
  if (!ctx.memo) return nullptr;
  KeptArgMaps<Call>* kept = ctx.memo->get<KeptArgMaps<Call>>();
  if (!kept || kept->call != call) {
    auto made = std::make_shared<KeptArgMaps<Call>>();
    made->call = call;
    made->maps = make();
    kept = &ctx.memo->set(made);
  }
  return kept->maps.data();
}

// Points a kept map's scratchpad at a buffer of its own for this call, which the returned pointer holds
// (null when `md` needs none).
inline std::shared_ptr<void> point_scratchpad(ArgMap& args, const dnnl::memory::desc& md) {
  if (md.get_size() == 0) return nullptr;
  std::shared_ptr<void> buffer = cpu_allocator().allocate(md.get_size());
  args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(buffer.get());
  return buffer;
}

}  // namespace pd::kernels::onednn
