// batch_norm in training over the global batch of a data-parallel job (PyTorch's SyncBatchNorm,
// PaddlePaddle's SyncBatchNorm): each rank's per-channel sums are added over the ranks, so every
// rank normalises with the mean and variance of the whole batch, and the running statistics are the
// same on every rank. Backward goes through the same sums (their gradient is summed over the ranks
// too), so the input gradients are those of one process holding the whole batch; the scale and bias
// gradients stay per rank, for the gradient reducer to average like any other parameter's.
#pragma once
#include <string>

#include "pd/core/tensor.h"
#include "pd/model/network.h"

namespace pd::model {

// x: [N, C, ...] on this rank (N may be 0: an empty share still takes part in the sums).
// `what` (the layer's name) labels the collectives.
Tensor sync_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, double momentum, double epsilon, const CrossRankSum& sum,
                       const std::string& what);

}  // namespace pd::model
