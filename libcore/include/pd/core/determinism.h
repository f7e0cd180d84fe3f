// The determinism switch (`deterministic: true` in a recipe, like torch.use_deterministic_algorithms
// and cuDNN's deterministic flag): GPU kernels then take only algorithms that give the same bits on
// every run (cuDNN's deterministic convolution algorithms), and ops that have only an atomic
// (order-dependent) GPU kernel refuse to run rather than vary. CPU kernels are deterministic always.
#pragma once

namespace pd {

void set_deterministic(bool on);
bool deterministic();

// Raises pd::Error when the switch is on: `op` on `where` has no deterministic kernel.
void require_nondeterministic_allowed(const char* op, const char* where);

}  // namespace pd
