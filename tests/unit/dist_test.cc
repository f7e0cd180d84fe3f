// The pieces under pd-dist, with threads as ranks: the rendezvous store, the Gloo process group (its
// collectives, sequence numbers and timeout messages) and the gradient reducer (averages over ranks,
// in several buckets, unused parameters as zero), and the optimizer shards of sharding stage 1.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "pd/dist/data_parallel.h"
#include "pd/dist/optimizer_shards.h"
#include "pd/model/sync_batch_norm.h"
#include "pd/train/optimizer.h"
#include "test_util.h"
#include "pd/pd.h"

using namespace std::chrono_literals;
using pd::Tensor;

namespace {

pd::dist::GroupOptions group_options(int rank, int world, std::chrono::milliseconds timeout) {
  pd::dist::GroupOptions o;
  o.rank = rank, o.world = world, o.timeout = timeout;
  return o;
}

// Runs fn(rank) on `world` threads and rethrows the first exception.
void run_ranks(int world, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

TEST_CASE("store: set, waiting get, add, try_get, timeouts that say what was awaited", "[dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  pd::dist::StoreClient a("127.0.0.1", server.port(), 2s), b("127.0.0.1", server.port(), 2s);
  a.set("k", std::string("v1"));
  CHECK(b.get_string("k") == "v1");
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    a.set("late", std::string("here"));
  });
  CHECK(b.get_string("late") == "here");  // waits for the set
  later.join();
  CHECK(a.add("n", 2) == 2);
  CHECK(b.add("n", 3) == 5);
  CHECK(!b.try_get("absent"));
  try {
    b.get("absent", 200ms, "node 3 of 4 to join");
    FAIL("a get of a key nobody sets returned");
  } catch (const pd::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("timed out after 0.2 s") && Catch::Contains("node 3 of 4 to join") &&
                             Catch::Contains(fmt::format("127.0.0.1:{}", server.port())));
  }
}

TEST_CASE("file store: set, waiting get, add under contention, try_get, a timeout naming the directory", "[dist]") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("pd-file-store-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  {
    pd::dist::FileStore a(dir, 2s), b(dir, 2s);
    a.set("gen0/gloo/1", std::string("v1"));
    CHECK(b.get_string("gen0/gloo/1") == "v1");
    a.set("gen0/gloo/1", std::string("v2"));  // keys can be set again (Gloo's FileStore refuses)
    CHECK(b.get_string("gen0/gloo/1") == "v2");
    std::thread later([&] {
      std::this_thread::sleep_for(100ms);
      a.set("late", std::string("here"));
    });
    CHECK(b.get_string("late") == "here");
    later.join();
    // Counters stay exact with several writers at once.
    std::vector<std::thread> adders;
    for (int t = 0; t < 4; ++t)
      adders.emplace_back([&] {
        pd::dist::FileStore own(dir, 2s);
        for (int i = 0; i < 25; ++i) own.add("n", 1);
      });
    for (auto& t : adders) t.join();
    CHECK(a.add("n", 0) == 100);
    CHECK(!b.try_get("absent"));
    CHECK_THROWS_WITH(b.get("absent", 200ms, "node 3 of 4 to join"),
                      Catch::Contains("timed out after 0.2 s") && Catch::Contains("file:" + dir) &&
                          Catch::Contains("node 3 of 4 to join"));
    a.clear();
    CHECK(!b.try_get("late"));
  }
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH(pd::dist::FileStore("/proc/pd-no-such-dir", 1s), Catch::Contains("cannot use /proc/pd-no-such-dir"));
}

TEST_CASE("store: an unreachable server is named within the timeout", "[dist]") {
  int port = 0;
  { port = pd::dist::StoreServer("127.0.0.1", 0).port(); }  // a port nobody serves now
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(pd::dist::StoreClient("127.0.0.1", port, 500ms),
                    Catch::Contains(fmt::format("cannot reach the rendezvous store at 127.0.0.1:{}", port)));
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
}

TEST_CASE("gloo group: allreduce, broadcast, allgather, barrier over 3 ranks", "[dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  run_ranks(3, [&](int rank) {
    pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
    auto pg = pd::dist::make_gloo_group(store, group_options(rank, 3, 10s));
    std::vector<float> x{float(rank), 1.0f, -2.0f * rank};
    pg->allreduce_sum(x.data(), x.size(), "test floats");
    CHECK(x == std::vector<float>{3.0f, 3.0f, -6.0f});
    std::vector<double> d{0.1 * rank};
    pg->allreduce_sum(d.data(), d.size(), "test doubles");
    CHECK(d[0] == Approx(0.3));
    int64_t v = rank == 2 ? 42 : 0;
    pg->broadcast(&v, sizeof v, 2, "from rank 2");
    CHECK(v == 42);
    int32_t mine = 10 + rank, all[3] = {};
    pg->allgather(&mine, all, sizeof mine, "ranks");
    CHECK((all[0] == 10 && all[1] == 11 && all[2] == 12));
    pg->barrier("end");
    CHECK(pg->sequence() == 5);
  });
}

TEST_CASE("gloo group: a rank that never joins the collective times out with its name and number", "[dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  std::string message;
  run_ranks(2, [&](int rank) {
    pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
    auto pg = pd::dist::make_gloo_group(store, group_options(rank, 2, 500ms));
    float x = 1;
    pg->allreduce_sum(&x, 1, "warm-up");
    if (rank == 1) {
      std::this_thread::sleep_for(1500ms);  // rank 0 gives up first
      return;
    }
    try {
      pg->allreduce_sum(&x, 1, "gradients, bucket 1 of 1");
    } catch (const pd::Error& e) {
      message = e.what();
    }
  });
  CHECK_THAT(message, Catch::Contains("allreduce #2 (gradients, bucket 1 of 1, 4 bytes) failed on rank 0 of 2") &&
                          Catch::Contains("stopped making progress"));
}

TEST_CASE("gradient reducer: the mean gradient over ranks, in several buckets, unused parameters as zero", "[dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  std::vector<std::vector<float>> grads(2);
  run_ranks(2, [&](int rank) {
    pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
    auto pg = pd::dist::make_gloo_group(store, group_options(rank, 2, 10s));
    std::vector<pd::train::NamedParam> params;
    for (int i = 0; i < 4; ++i) {
      Tensor w = Tensor::from_vector<float>(std::vector<float>(3, 1.0f), {3});
      w.set_requires_grad(true);
      params.push_back({"w" + std::to_string(i), w});
    }
    pd::dist::GradientReducer reducer(*pg, params, 8);  // 12-byte tensors: one bucket each
    CHECK(reducer.bucket_count() == 4);
    for (int step = 0; step < 2; ++step) {  // the reducer resets between steps
      // loss = sum_i sum(w_i * x_i) over the first three parameters; w3 is unused.
      Tensor loss;
      for (int i = 0; i < 3; ++i) {
        Tensor x = Tensor::from_vector<float>({float(rank + i), float(step), 2.0f * rank}, {3});
        Tensor term = pd::ops::sum(pd::ops::mul(params[i].value, x));
        loss = loss.defined() ? pd::ops::add(loss, term) : term;
      }
      for (auto& p : params) p.value.zero_grad();
      pd::backward(loss);
      reducer.finish();
      for (int i = 0; i < 4; ++i) {
        const Tensor g = params[i].value.grad();
        REQUIRE(g.defined());
        const float* p = g.data<float>();
        if (i == 3) {
          CHECK((p[0] == 0 && p[1] == 0 && p[2] == 0));
        } else {
          CHECK(p[0] == Approx(0.5f + i));  // mean of rank + i over ranks 0 and 1
          CHECK(p[1] == Approx(float(step)));
          CHECK(p[2] == Approx(1.0f));
        }
      }
    }
  });
}

TEST_CASE("optimizer shards: balanced owners, each rank's update sent to all, the whole state put together", "[dist]") {
  pd::dist::StoreServer server("127.0.0.1", 0);
  const std::vector<int64_t> sizes{10, 40, 25, 5, 20};
  std::vector<std::vector<float>> ended(2);
  run_ranks(2, [&](int rank) {
    pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
    auto pg = pd::dist::make_gloo_group(store, group_options(rank, 2, 10s));
    std::vector<pd::train::NamedParam> params;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Tensor w = pd::ops::full({sizes[i]}, 1.0, pd::DType::f32);
      w.set_requires_grad(true);
      params.push_back({"w" + std::to_string(i), w});
    }
    pd::dist::OptimizerShards shards(*pg, params, 7);  // 7-element allgathers: parameters split over rounds
    // Largest first to the lighter rank: 40 -> 0, 25 -> 1, 20 -> 1, 10 -> 0, 5 -> 1 (45 + 50 elements).
    CHECK(std::vector<int>{shards.owner(0), shards.owner(1), shards.owner(2), shards.owner(3), shards.owner(4)} ==
          std::vector<int>{0, 0, 1, 1, 1});
    CHECK(shards.elements_of(0) == 50);
    CHECK(shards.elements_of(1) == 50);
    pd::train::Optimizer opt(params, {.kind = pd::train::OptimizerKind::Adam}, shards.owned());
    CHECK(opt.state_bytes() == 2 * 50 * 4);  // two moments of this rank's 50 elements
    // The same steps unsharded, on copies: the sharded ones must end with the same bits.
    std::vector<pd::train::NamedParam> copies;
    for (const auto& p : params) copies.push_back({p.name, p.value.clone()});
    pd::train::Optimizer reference(copies, {.kind = pd::train::OptimizerKind::Adam});
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < params.size(); ++i) {
        params[i].value.set_grad(pd::ops::full({sizes[i]}, 0.5 + i + step, pd::DType::f32));
        copies[i].value.set_grad(pd::ops::full({sizes[i]}, 0.5 + i + step, pd::DType::f32));
      }
      reference.step(0.1);
      const float before0 = params[0].value.data<float>()[0], before2 = params[2].value.data<float>()[7];
      opt.step(0.1);
      // Only the owner moved its parameters; after the gather everyone has every owner's values.
      CHECK((params[0].value.data<float>()[0] != before0) == (rank == 0));
      CHECK((params[2].value.data<float>()[7] != before2) == (rank == 1));
      shards.gather_parameters();
      CHECK(params[0].value.data<float>()[0] < before0);
      CHECK(params[2].value.data<float>()[7] < before2);
    }
    for (size_t i = 0; i < params.size(); ++i)
      CHECK(pd::test::max_abs_diff(params[i].value, copies[i].value) == 0.0f);
    const auto whole = shards.gather_state(opt.state(false), {"m", "v"});  // on rank 0 only
    if (rank == 0) {
      CHECK(whole.size() == 1 + 2 * sizes.size());  // step, and m and v of every parameter
      CHECK(whole.at("step").item<int64_t>() == 3);
      CHECK(whole.at("w2.m").numel() == 25);
      // A whole state loads into a sharded optimizer (its own entries taken).
      pd::train::Optimizer again(params, {.kind = pd::train::OptimizerKind::Adam}, shards.owned());
      again.load_state(whole);
      CHECK(pd::test::max_abs_diff(again.state().at("w0.v"), opt.state().at("w0.v")) == 0.0f);
    } else {
      CHECK(whole.empty());
    }
    // A shard alone does not load into an unsharded optimizer.
    pd::train::Optimizer unsharded(params, {.kind = pd::train::OptimizerKind::Adam});
    CHECK_THROWS_WITH(unsharded.load_state(opt.state()), Catch::Contains("missing key"));
    for (const auto& p : params)
      for (int64_t k = 0; k < p.value.numel(); ++k) ended[rank].push_back(p.value.data<float>()[k]);
  });
  CHECK(ended[0] == ended[1]);
}

TEST_CASE("sync_batch_norm: two ranks with half a batch each get one process's output and gradients", "[dist]") {
  // The whole batch through batch_norm in one process: the reference.
  const pd::Shape shape{6, 3, 2, 2};
  const Tensor x_all = pd::ops::uniform(shape, -1.5, 2.5, 5), dy_all = pd::ops::uniform(shape, -1, 1, 6);
  auto make = [](double v) { return pd::ops::full({3}, v, pd::DType::f32); };
  auto run_reference = [&] {
    Tensor x = x_all.clone(), scale = make(1.5), bias = make(0.25), rm = make(0), rv = make(1);
    x.set_requires_grad(true), scale.set_requires_grad(true), bias.set_requires_grad(true);
    Tensor y = std::get<0>(pd::ops::batch_norm(x, scale, bias, rm, rv, 0.9, 1e-5, true));
    pd::backward({y}, {dy_all});
    return std::vector<Tensor>{y, x.grad(), scale.grad(), bias.grad(), rm, rv};
  };
  const auto want = run_reference();
  // Ranks 0 and 1 take rows [0, 4) and [4, 6): unequal shares, as a short last batch gives.
  pd::dist::StoreServer server("127.0.0.1", 0);
  std::vector<std::vector<Tensor>> got(2);
  run_ranks(2, [&](int rank) {
    pd::dist::StoreClient store("127.0.0.1", server.port(), 10s);
    auto pg = pd::dist::make_gloo_group(store, group_options(rank, 2, 10s));
    const pd::model::CrossRankSum sum = [&](double* v, size_t n, const std::string& what) { pg->allreduce_sum(v, n, what); };
    const int64_t lo = rank == 0 ? 0 : 4, hi = rank == 0 ? 4 : 6;
    Tensor x = pd::ops::slice(x_all, {0}, {lo}, {hi}).contiguous(), scale = make(1.5), bias = make(0.25), rm = make(0),
           rv = make(1);
    x.set_requires_grad(true), scale.set_requires_grad(true), bias.set_requires_grad(true);
    Tensor y = pd::model::sync_batch_norm(x, scale, bias, rm, rv, 0.9, 1e-5, sum, "bn");
    pd::backward({y}, {pd::ops::slice(dy_all, {0}, {lo}, {hi}).contiguous()});
    got[rank] = {y, x.grad(), scale.grad(), bias.grad(), rm, rv};
  });
  for (int i = 0; i < 2; ++i)  // y and x's gradient: each rank's rows of the whole batch's
    CHECK(pd::test::max_abs_diff(pd::ops::concat({got[0][i], got[1][i]}), want[i]) < 1e-5f);
  for (int i = 2; i < 4; ++i)  // scale and bias: per rank, adding up to the whole batch's
    CHECK(pd::test::max_abs_diff(pd::ops::add(got[0][i], got[1][i]), want[i]) < 1e-5f);
  for (int r = 0; r < 2; ++r)
    for (int i = 4; i < 6; ++i) CHECK(pd::test::max_abs_diff(got[r][i], want[i]) < 1e-6f);  // the same running statistics
}
