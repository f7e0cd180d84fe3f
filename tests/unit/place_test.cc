// Places and device memory: a place this build has no device for is refused by name; with a device
// allocator registered (here a stand-in that keeps its memory on the host and counts copies, as a CUDA
// backend's would), tensors move there and back with Tensor::to, and ops refuse inputs on two places;
// ops with no tensor input make their output on the thread's default place.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "pd/core/allocator.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::Place;
using pd::Tensor;
using pd::test::error_of;

#ifdef PD_WITH_CUDA
namespace pd::kernels::cuda {
void load_cublas();  // kernels/cuda/cublas_library.cu
}
#endif

namespace {

class HostBackedDevice final : public pd::Allocator {
 public:
  std::shared_ptr<void> allocate(size_t bytes) override { return pd::cpu_allocator().allocate(bytes); }
  pd::AllocatorStats stats() const override { return {}; }
  void reset_peak() override {}
  void empty_cache() override {}
  void copy_to_host(void* dst, const void* src, size_t bytes) const override { std::memcpy(dst, src, bytes), ++to_host; }
  void copy_from_host(void* dst, const void* src, size_t bytes) const override { std::memcpy(dst, src, bytes), ++from_host; }
  void copy_strided(void* dst, const void* src, size_t elem, const pd::Shape& shape, const pd::Shape& strides) const override {
    pd::cpu_allocator().copy_strided(dst, src, elem, shape, strides);
  }
  mutable int to_host = 0, from_host = 0;
};

HostBackedDevice& device0() {
  static HostBackedDevice d;
  return d;
}

pd::Allocator* one_device(int index) { return index == 0 ? &device0() : nullptr; }

// Registers the stand-in for the scope of a test.
struct RegisteredDevice {
  RegisteredDevice() { pd::register_allocator(pd::DeviceType::cuda, one_device); }
  ~RegisteredDevice() { pd::register_allocator(pd::DeviceType::cuda, nullptr); }
};

}  // namespace

TEST_CASE("place: a device this build lacks is refused by name", "[place]") {
  CHECK(&pd::allocator_for(Place::cpu()) == &pd::cpu_allocator());
  if (pd::device_count(pd::DeviceType::cuda) > 0) return;  // a GPU machine: tests/gpu covers it
#ifdef PD_WITH_CUDA
  CHECK_THAT(error_of([] { Tensor::empty({2}, pd::DType::f32, Place::cuda(0)); }),
             Catch::Contains("place cuda:0 is not available: no such device"));
  CHECK_THAT(error_of([] { pd::parse_place("cuda"); }), Catch::Contains("no usable CUDA GPU"));
#else
  CHECK_THAT(error_of([] { Tensor::empty({2}, pd::DType::f32, Place::cuda(0)); }),
             Catch::Contains("place cuda:0 is not available: this build has no cuda backend"));
  CHECK_THAT(error_of([] { pd::parse_place("cuda:0"); }), Catch::Contains("this build has no CUDA backend"));
#endif
  CHECK_THAT(error_of([] { pd::parse_place("gpu"); }), Catch::Contains("expected cpu, cuda or cuda:N"));
  CHECK(pd::parse_place("cpu") == Place::cpu());
  const Tensor t = pd::ops::ones({3});
  CHECK(t.to(Place::cpu()).storage() == t.storage());  // already there: no copy
  CHECK_THAT(error_of([&] { t.to(Place::cuda(0)); }), Catch::Contains("cuda:0 is not available"));
}

TEST_CASE("place: ops with no tensor input follow this thread's default place", "[place]") {
  REQUIRE(pd::default_place() == Place::cpu());
  {
    const pd::DefaultPlaceGuard outer(Place::cuda(0));
    CHECK(pd::default_place() == Place::cuda(0));
    {
      const pd::DefaultPlaceGuard inner(Place::cpu());
      CHECK(pd::ops::zeros({2}).place() == Place::cpu());
    }
    CHECK(pd::default_place() == Place::cuda(0));
    Place other = Place::cuda(0);
    std::thread([&] { other = pd::default_place(); }).join();
    CHECK(other == Place::cpu());  // a guard is per thread
    if (pd::device_count(pd::DeviceType::cuda) == 0)  // refused by name, as Tensor::empty on that place is
      CHECK_THAT(error_of([] { pd::ops::arange(0.0, 4.0); }), Catch::Contains("cuda:0 is not available"));
  }
  CHECK(pd::default_place() == Place::cpu());
  CHECK(pd::ops::full({2}, 3.0).place() == Place::cpu());
}

TEST_CASE("place: tensors move to a device and back; ops refuse mixed places", "[place]") {
  RegisteredDevice device;
  HostBackedDevice& d = device0();
  const int to0 = d.to_host, from0 = d.from_host;
  const Tensor x = pd::ops::transpose(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}), {1, 0});  // strided
  const Tensor on_device = x.to(Place::cuda(0));
  CHECK(on_device.place() == Place::cuda(0));
  CHECK(on_device.is_contiguous());
  CHECK(d.from_host == from0 + 1);
  const Tensor back = on_device.to(Place::cpu());
  CHECK(d.to_host == to0 + 1);
  CHECK(back.place().is_cpu());
  CHECK(back.to_vector<float>() == x.to_vector<float>());
  CHECK_THAT(error_of([] { Tensor::empty({1}, pd::DType::f32, Place::cuda(1)); }), Catch::Contains("cuda:1") && Catch::Contains("no such device"));
  CHECK_THAT(error_of([&] { pd::ops::add(x, on_device); }),
             Catch::Contains("add: argument 'y' is on cuda:0, but 'x' is on cpu"));
  CHECK_THAT(error_of([&] { pd::ops::concat({back, on_device}, 0); }), Catch::Contains("is on cuda:0, but 'xs' is on cpu"));
#ifndef PD_WITH_CUDA
  // No kernels for the device in this build: the op says so.
  CHECK_THAT(error_of([&] { pd::ops::relu(on_device); }), Catch::Contains("relu: no kernel for dtype f32 on cuda:0"));
#endif
}

// A tool that never touches a GPU (pd-infer --version, pd-train on the CPU) must not pay for cuBLAS,
// whose start-up costs about 210 MB of resident memory: the first CUDA kernel that needs it loads it.
TEST_CASE("place: cuBLAS is loaded only when a CUDA kernel needs it", "[place]") {
  const auto cublas_mapped = [] {
    std::ifstream maps("/proc/self/maps");
    const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    return all.find("libcublas") != std::string::npos;
  };
  CHECK(pd::ops::matmul(pd::ops::ones({4, 4}), pd::ops::ones({4, 4})).to_vector<float>()[0] == 4.0f);
  CHECK(!cublas_mapped());
#ifdef PD_WITH_CUDA
  pd::kernels::cuda::load_cublas();  // the toolkit is installed where this was built; no GPU is needed to load it
  CHECK(cublas_mapped());
#endif
}
