// Kernel selection switches and the oneDNN primitive cache.
#include <catch2/catch.hpp>

#include "pd/pd.h"
#ifdef PD_WITH_ONEDNN
#include "cpu/onednn/onednn_cache.h"
#endif

TEST_CASE("reference kernels can be forced through the API", "[dispatch]") {
  pd::Tensor x = pd::ops::uniform({8, 16}, -1, 1, 3);
  pd::Tensor w = pd::ops::uniform({4, 16}, -1, 1, 4);
  pd::Tensor fast = pd::ops::linear(x, w);
  pd::Tensor ref;
  {
    pd::ScopedKernelBackend guard(pd::Backend::reference);
    ref = pd::ops::linear(x, w);
  }
  auto a = fast.to_vector<float>(), b = ref.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-5));
}

#ifdef PD_WITH_ONEDNN
TEST_CASE("oneDNN primitives are created once per shape", "[onednn]") {
  pd::Tensor x = pd::ops::uniform({2, 3, 8, 8}, -1, 1, 1);
  pd::Tensor w = pd::ops::uniform({4, 3, 3, 3}, -1, 1, 2);
  pd::ops::conv2d(x, w);
  int64_t created = pd::kernels::onednn::onednn_primitives_created();
  for (int i = 0; i < 5; ++i) pd::ops::conv2d(x, w);
  CHECK(pd::kernels::onednn::onednn_primitives_created() == created);
}
#endif
