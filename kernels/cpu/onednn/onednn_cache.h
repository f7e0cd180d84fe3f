// Public view of the oneDNN primitive cache, kept free of oneDNN headers so that tests and
// libcore can include it without depending on dnnl.hpp.
#pragma once
#include <cstdint>

namespace pd::kernels::onednn {

// Number of cache misses so far (each miss builds primitive descriptors and primitives).
// Repeating a call with the same shapes and attributes must leave it unchanged.
int64_t onednn_primitives_created();
// Drops every cached primitive (the counter keeps counting).
void onednn_clear_primitive_cache();

}  // namespace pd::kernels::onednn
