// pd-dist's NCCL process group on the lent GPU machine: the collectives on device buffers (world 1:
// the plumbing, bootstrap through the store included), the gradient reducer on cuda:0, and a peer that
// never joins turning into an error within the timeout instead of a hang.
#include <catch2/catch.hpp>

#include <chrono>

#include "pd/dist/data_parallel.h"
#include "pd/pd.h"

using namespace std::chrono_literals;
using pd::Place;
using pd::Tensor;

namespace {
pd::dist::GroupOptions one_rank(int world, std::chrono::milliseconds timeout) {
  pd::dist::GroupOptions o;
  o.rank = 0, o.world = world, o.timeout = timeout, o.name = "nccl-test";
  return o;
}
}  // namespace

TEST_CASE("gpu: NCCL group collectives on device buffers, one rank", "[gpu][dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
  auto pg = pd::dist::make_nccl_group(store, one_rank(1, 10s), 0);
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}).to(Place::cuda(0));
  pg->allreduce_sum(x.data<float>(), 3, "test allreduce");
  CHECK(x.to_vector<float>() == std::vector<float>{1, 2, 3});
  Tensor d = Tensor::from_vector<double>({0.5}, {1}).to(Place::cuda(0));
  pg->allreduce_sum(d.data<double>(), 1, "test allreduce f64");
  CHECK(d.to_vector<double>()[0] == 0.5);
  pg->broadcast(x.data<float>(), 3 * sizeof(float), 0, "test broadcast");
  Tensor out = Tensor::empty({3}, pd::DType::f32, Place::cuda(0));
  pg->allgather(x.data<float>(), out.data<float>(), 3 * sizeof(float), "test allgather");
  CHECK(out.to_vector<float>() == std::vector<float>{1, 2, 3});
  Tensor got = Tensor::empty({3}, pd::DType::f32, Place::cuda(0));
  pg->gather(x.data<float>(), got.data<float>(), 3 * sizeof(float), 0, "test gather");
  CHECK(got.to_vector<float>() == std::vector<float>{1, 2, 3});
  pg->barrier("test barrier");
  CHECK(pg->sequence() == 6);
}

TEST_CASE("gpu: the gradient reducer averages gradients on cuda:0 through NCCL", "[gpu][dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
  auto pg = pd::dist::make_nccl_group(store, one_rank(1, 10s), 0);
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).to(Place::cuda(0));
  Tensor unused = Tensor::from_vector<float>({5}, {1}).to(Place::cuda(0));
  w.set_requires_grad(true);
  unused.set_requires_grad(true);
  pd::dist::GradientReducer reducer(*pg, {{"w", w}, {"unused", unused}}, 4);
  Tensor loss = pd::ops::sum(pd::ops::mul(w, w));
  pd::backward(loss);
  reducer.finish();
  CHECK(w.grad().place() == Place::cuda(0));
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 4, 6, 8});
  CHECK(unused.grad().to_vector<float>() == std::vector<float>{0});
}

TEST_CASE("gpu: an NCCL peer that never joins is an error within the timeout, not a hang", "[gpu][dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  pd::dist::StoreClient store("127.0.0.1", server.port(), 2s);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(pd::dist::make_nccl_group(store, one_rank(2, 2s), 0),
                    Catch::Contains("joining the NCCL communicator") && Catch::Contains("rank 0 of 2"));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
}
