// Umbrella header: tensors, autograd and every op.
//
//   #include "pd/pd.h"
//   pd::Tensor x = pd::ops::uniform({4, 3}, -1, 1, /*seed=*/0);
//   x.set_requires_grad(true);
//   pd::backward(pd::ops::sum(pd::ops::tanh(x)));
#pragma once
#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/allocator.h"
#include "pd/core/tensor.h"
#include "pd/core/tensor_inl.h"
#include "pd/ops/dispatch.h"
#include "pd/ops/op_schema.h"
