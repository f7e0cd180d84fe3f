// The pieces under pd-dist, with threads as ranks: the rendezvous store, the Gloo process group (its
// collectives, sequence numbers and timeout messages) and the gradient reducer (averages over ranks,
// in several buckets, unused parameters as zero).
#include <catch2/catch.hpp>

#include <functional>
#include <thread>

#include "pd/dist/data_parallel.h"
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
