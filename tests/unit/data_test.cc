// Dataset readers (IDX, NPY, CSV) and the DataLoader: formats, refusals, determinism, prefetch.
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "pd/data/loader.h"
#include "pd/data/readers.h"
#include "pd/pd.h"

namespace fs = std::filesystem;
using pd::Tensor;
using pd::data::DataLoader;
using pd::data::Dataset;
using pd::data::LoaderOptions;
using pd::data::Transform;

namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() / ("pd_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes, bool gz = false) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}
std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// IDX header + big-endian payload of `elem`-byte values.
std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<int64_t>& raw, int elem) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  const auto put = [&](uint64_t v, int bytes) {
    for (int b = bytes - 1; b >= 0; --b) s += static_cast<char>((v >> (8 * b)) & 0xff);
  };
  for (uint32_t d : dims) put(d, 4);
  for (int64_t v : raw) put(static_cast<uint64_t>(v), elem);
  return s;
}
template <typename F>
int64_t bits_of(F f) {
  if constexpr (sizeof(F) == 4) return std::bit_cast<uint32_t>(f);
  else return static_cast<int64_t>(std::bit_cast<uint64_t>(f));
}

// Message of the pd::Error thrown by fn (fails the test if none).
template <typename Fn>
std::string error_of(Fn&& fn, pd::ErrorCode code) {
  try {
    fn();
  } catch (const pd::Error& e) {
    CHECK(e.code() == code);
    return e.what();
  }
  FAIL("no pd::Error thrown");
  return "";
}

std::vector<std::vector<float>> epoch_batches(DataLoader& loader, int64_t epoch, std::vector<int64_t>* labels = nullptr,
                                              int64_t skip = 0) {
  std::vector<std::vector<float>> out;
  loader.start_epoch(epoch, skip);
  while (auto b = loader.next()) {
    out.push_back(b->x.to_vector<float>());
    if (labels) for (int64_t v : b->y.to_vector<int64_t>()) labels->push_back(v);
  }
  return out;
}

// N samples of shape [2, 3, 4] whose features encode their index; labels = index.
Dataset toy_dataset(int64_t n) {
  std::vector<uint8_t> f(static_cast<size_t>(n * 24));
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>((i / 24) * 7 + i % 24);
  std::vector<int32_t> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) l[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return {Tensor::from_vector<uint8_t>(f, {n, 2, 3, 4}), Tensor::from_vector<int32_t>(l, {n})};
}

// Transform builders (designated initializers would warn about the vectors left out).
Transform make(Transform::Kind kind, double scale = 1, double p = 0.5, int64_t padding = 0) {
  Transform t;
  t.kind = kind;
  t.scale = scale;
  t.p = p;
  t.padding = padding;
  return t;
}
Transform flip(double p) { return make(Transform::RandomFlip, 1, p); }
Transform crop(int64_t padding) { return make(Transform::RandomCrop, 1, 0.5, padding); }
Transform normalize(std::vector<double> mean, std::vector<double> std) {
  Transform t = make(Transform::Normalize);
  t.mean = std::move(mean);
  t.std = std::move(std);
  return t;
}

}  // namespace

TEST_CASE("read_idx reads the real Fashion-MNIST test set", "[data]") {
  if (!fs::exists(kFashion + "t10k-images-idx3-ubyte.gz")) {
    WARN("Fashion-MNIST not installed under " << kFashion << "; skipped");
    return;
  }
  Tensor images = pd::data::read_idx(kFashion + "t10k-images-idx3-ubyte.gz");
  CHECK(images.dtype() == pd::DType::u8);
  CHECK(images.shape() == pd::Shape{10000, 28, 28});
  Tensor labels = pd::data::read_idx(kFashion + "t10k-labels-idx1-ubyte.gz");
  CHECK(labels.dtype() == pd::DType::u8);
  REQUIRE(labels.shape() == pd::Shape{10000});
  std::vector<int> per_class(10);
  for (uint8_t v : labels.to_vector<uint8_t>()) {
    REQUIRE(v < 10);
    ++per_class[v];
  }
  CHECK(per_class == std::vector<int>(10, 1000));  // the test split is balanced
  const auto px = images.to_vector<uint8_t>();
  CHECK(*std::max_element(px.begin(), px.end()) == 255);
}

TEST_CASE("read_idx: every type, plain and gzipped", "[data]") {
  TempDir tmp;
  for (bool gz : {false, true}) {
    const std::string sfx = gz ? ".gz" : "";
    write_bytes(tmp / ("u8" + sfx), idx_bytes(0x08, {2, 3}, {0, 1, 2, 200, 254, 255}, 1), gz);
    Tensor u8 = pd::data::read_idx(tmp / ("u8" + sfx));
    CHECK(u8.dtype() == pd::DType::u8);
    CHECK(u8.shape() == pd::Shape{2, 3});
    CHECK(u8.to_vector<int>() == std::vector<int>{0, 1, 2, 200, 254, 255});

    write_bytes(tmp / ("i8" + sfx), idx_bytes(0x09, {3}, {-128, -1, 127}, 1), gz);
    Tensor i8 = pd::data::read_idx(tmp / ("i8" + sfx));
    CHECK(i8.dtype() == pd::DType::i8);
    CHECK(i8.to_vector<int>() == std::vector<int>{-128, -1, 127});

    write_bytes(tmp / ("i16" + sfx), idx_bytes(0x0B, {3}, {-32768, -2, 1000}, 2), gz);
    Tensor i16 = pd::data::read_idx(tmp / ("i16" + sfx));
    CHECK(i16.dtype() == pd::DType::i32);  // widened
    CHECK(i16.to_vector<int32_t>() == std::vector<int32_t>{-32768, -2, 1000});

    write_bytes(tmp / ("i32" + sfx), idx_bytes(0x0C, {1, 2}, {-70000, 2147483647}, 4), gz);
    CHECK(pd::data::read_idx(tmp / ("i32" + sfx)).to_vector<int32_t>() == std::vector<int32_t>{-70000, 2147483647});

    write_bytes(tmp / ("f32" + sfx), idx_bytes(0x0D, {2}, {bits_of(1.5f), bits_of(-0.25f)}, 4), gz);
    Tensor f32 = pd::data::read_idx(tmp / ("f32" + sfx));
    CHECK(f32.dtype() == pd::DType::f32);
    CHECK(f32.to_vector<float>() == std::vector<float>{1.5f, -0.25f});

    write_bytes(tmp / ("f64" + sfx), idx_bytes(0x0E, {1}, {bits_of(3.141592653589793)}, 8), gz);
    Tensor f64 = pd::data::read_idx(tmp / ("f64" + sfx));
    CHECK(f64.dtype() == pd::DType::f64);
    CHECK(f64.item<double>() == 3.141592653589793);

    write_bytes(tmp / ("empty" + sfx), idx_bytes(0x08, {0, 28}, {}, 1), gz);
    CHECK(pd::data::read_idx(tmp / ("empty" + sfx)).shape() == pd::Shape{0, 28});
  }
}

TEST_CASE("read_idx refuses missing, bad-magic, truncated and padded files", "[data]") {
  TempDir tmp;
  const std::string missing = tmp / "nope.idx";
  CHECK_THAT(error_of([&] { pd::data::read_idx(missing); }, pd::ErrorCode::kIO), Catch::Contains(missing));

  const std::string bad = tmp / "bad.idx";
  write_bytes(bad, "\x89PNG\r\n\x1a\n");
  std::string msg = error_of([&] { pd::data::read_idx(bad); }, pd::ErrorCode::kParse);
  CHECK_THAT(msg, Catch::StartsWith(bad) && Catch::Contains("magic"));
  write_bytes(bad, idx_bytes(0x0A, {1}, {0}, 1));  // unknown type byte
  CHECK_THAT(error_of([&] { pd::data::read_idx(bad); }, pd::ErrorCode::kParse), Catch::Contains("magic"));

  const std::string full = idx_bytes(0x0D, {2, 3}, {1, 2, 3, 4, 5, 6}, 4);
  const std::string cut = tmp / "cut.idx";
  write_bytes(cut, full.substr(0, full.size() - 5));
  msg = error_of([&] { pd::data::read_idx(cut); }, pd::ErrorCode::kParse);
  CHECK_THAT(msg, Catch::StartsWith(cut) && Catch::Contains("expected 24 bytes of data for shape [2, 3], found 19"));
  write_bytes(cut, full.substr(0, 7));  // inside the dims
  CHECK_THAT(error_of([&] { pd::data::read_idx(cut); }, pd::ErrorCode::kParse), Catch::StartsWith(cut));

  const std::string padded = tmp / "padded.idx";
  write_bytes(padded, full + "xx");
  CHECK_THAT(error_of([&] { pd::data::read_idx(padded); }, pd::ErrorCode::kParse),
             Catch::StartsWith(padded) && Catch::Contains("trailing"));

  // A gzip stream cut short is refused, not read as a short file.
  const std::string gz = tmp / "full.gz", gz_cut = tmp / "cut.gz";
  std::vector<int64_t> many(5000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>(i * 7919 % 251);
  write_bytes(gz, idx_bytes(0x08, {5000}, many, 1), true);
  CHECK(pd::data::read_idx(gz).numel() == 5000);
  const std::string gz_bytes = read_bytes(gz);
  write_bytes(gz_cut, gz_bytes.substr(0, gz_bytes.size() / 2));
  CHECK_THAT(error_of([&] { pd::data::read_idx(gz_cut); }, pd::ErrorCode::kParse),
             Catch::StartsWith(gz_cut) && Catch::Contains("gzip"));
}

TEST_CASE("npy: write_npy/read_npy round trip every dtype", "[data]") {
  TempDir tmp;
  const std::vector<Tensor> cases = {
      Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3}),
      Tensor::from_vector<double>({1e-300, -7}, {2}),
      Tensor::from_vector<int8_t>({-128, 0, 127}, {3, 1}),
      Tensor::from_vector<uint8_t>({0, 255}, {1, 2, 1}),
      Tensor::from_vector<int32_t>({-5, 1 << 30}, {2}),
      Tensor::from_vector<int64_t>({int64_t{1} << 40, -1}, {2}),
      Tensor::from_vector<bool>({true, false, true}, {3}),
      Tensor::scalar<float>(42.0f),
      Tensor::empty({0, 5}, pd::DType::f32),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = tmp / ("t" + std::to_string(i) + ".npy");
    pd::data::write_npy(path, cases[i]);
    const std::string bytes = read_bytes(path);
    CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
    const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    CHECK((10 + header_len) % 64 == 0);  // numpy aligns the data
    Tensor back = pd::data::read_npy(path);
    CHECK(back.dtype() == cases[i].dtype());
    CHECK(back.shape() == cases[i].shape());
    CHECK(back.to_vector<double>() == cases[i].to_vector<double>());
  }
  // A non-contiguous view is written in logical order.
  Tensor t = pd::ops::transpose(Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}), {1, 0});
  pd::data::write_npy(tmp / "t.npy", t);
  CHECK(pd::data::read_npy(tmp / "t.npy").to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(pd::data::write_npy(tmp / "h.npy", Tensor::empty({2}, pd::DType::f16)), pd::Error);
}

TEST_CASE("npy: versions 2.0/3.0 read; fortran, big-endian and truncated refused", "[data]") {
  TempDir tmp;
  const auto make = [](int major, const std::string& dict, const std::string& data) {
    std::string s("\x93NUMPY", 6);
    s += static_cast<char>(major);
    s += '\0';
    const uint32_t len = static_cast<uint32_t>(dict.size());
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) s += static_cast<char>((len >> (8 * i)) & 0xff);
    return s + dict + data;
  };
  const std::string data("\x01\x00\x00\x00\x02\x00\x00\x00", 8);
  for (int major : {1, 2, 3}) {
    const std::string path = tmp / ("v" + std::to_string(major) + ".npy");
    write_bytes(path, make(major, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}\n", data));
    CHECK(pd::data::read_npy(path).to_vector<int32_t>() == std::vector<int32_t>{1, 2});
  }
  const std::string path = tmp / "bad.npy";
  write_bytes(path, make(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }\n", data));
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kParse), Catch::Contains("fortran"));
  write_bytes(path, make(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n", data));
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kDType), Catch::Contains("big-endian"));
  write_bytes(path, make(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", data));
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kDType), Catch::Contains("<c8"));
  write_bytes(path, make(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n", data));
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kParse),
             Catch::StartsWith(path) && Catch::Contains("expected 12 bytes"));
  write_bytes(path, make(1, "{'descr': '<i4', 'shape': (2,), }\n", data));
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kParse), Catch::StartsWith(path));
  write_bytes(path, "PK\x03\x04 not npy");
  CHECK_THAT(error_of([&] { pd::data::read_npy(path); }, pd::ErrorCode::kParse), Catch::Contains("magic"));
  CHECK_THAT(error_of([&] { pd::data::read_npy(tmp / "missing.npy"); }, pd::ErrorCode::kIO),
             Catch::Contains("missing.npy"));
}

TEST_CASE("read_csv: header, label column, and errors with file:line:column", "[data]") {
  TempDir tmp;
  const std::string path = tmp / "d.csv";
  write_bytes(path, "a,b,label\r\n1.5, -2,3\r\n\r\n+4,5e-1,0\r\n");
  auto t = pd::data::read_csv(path, -1, true);
  CHECK(t.features.dtype() == pd::DType::f32);
  CHECK(t.features.shape() == pd::Shape{2, 2});
  CHECK(t.features.to_vector<float>() == std::vector<float>{1.5f, -2, 4, 0.5f});
  CHECK(t.labels.dtype() == pd::DType::i64);
  CHECK(t.labels.to_vector<int64_t>() == std::vector<int64_t>{3, 0});

  write_bytes(path, "7,1,2\n9,3,4\n");
  t = pd::data::read_csv(path, 0);
  CHECK(t.labels.to_vector<int64_t>() == std::vector<int64_t>{7, 9});
  CHECK(t.features.to_vector<float>() == std::vector<float>{1, 2, 3, 4});

  write_bytes(path, "1,2,3\n4,x5,6\n");
  CHECK_THAT(error_of([&] { pd::data::read_csv(path); }, pd::ErrorCode::kParse),
             Catch::Contains(path + ":2:3") && Catch::Contains("x5"));
  write_bytes(path, "1,2,3\n4,5,6.5\n");
  CHECK_THAT(error_of([&] { pd::data::read_csv(path); }, pd::ErrorCode::kParse),
             Catch::Contains(path + ":2:5") && Catch::Contains("6.5"));
  write_bytes(path, "1,2,3\n4,5\n");
  CHECK_THAT(error_of([&] { pd::data::read_csv(path); }, pd::ErrorCode::kParse), Catch::Contains(path + ":2:"));
  write_bytes(path, "1,2,3\n");
  CHECK_THROWS_AS(pd::data::read_csv(path, 3), pd::Error);
  CHECK_THAT(error_of([&] { pd::data::read_csv(tmp / "none.csv"); }, pd::ErrorCode::kIO), Catch::Contains("none.csv"));
}

TEST_CASE("DataLoader: every sample once per epoch, partial last batch, seeded order", "[data]") {
  Dataset data = toy_dataset(10);
  DataLoader loader(data, {.batch_size = 4, .shuffle = true, .seed = 3, .prefetch = 2});
  CHECK(loader.batches_per_epoch() == 3);
  std::vector<int64_t> labels;
  auto batches = epoch_batches(loader, 0, &labels);
  REQUIRE(batches.size() == 3);
  CHECK(batches[2].size() == 2 * 24);  // drop_last = false keeps the last 2 samples
  CHECK(std::set<int64_t>(labels.begin(), labels.end()).size() == 10);
  // Features follow their labels through the shuffle.
  std::vector<float> flat;
  for (auto& b : batches) flat.insert(flat.end(), b.begin(), b.end());
  for (size_t i = 0; i < labels.size(); ++i) CHECK(flat[i * 24 + 5] == static_cast<float>(labels[i] * 7 + 5));

  std::vector<int64_t> again, other;
  epoch_batches(loader, 0, &again);
  epoch_batches(loader, 1, &other);
  CHECK(again == labels);
  CHECK(other != labels);
  std::vector<int64_t> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(labels != identity);

  DataLoader plain(data, {.batch_size = 4, .drop_last = true});
  std::vector<int64_t> ordered;
  CHECK(epoch_batches(plain, 5, &ordered).size() == 2);
  CHECK(ordered == std::vector<int64_t>(identity.begin(), identity.begin() + 8));
  CHECK(!plain.next().has_value());  // stays finished
}

TEST_CASE("DataLoader: prefetch on/off identical, skip_batches resumes, transforms deterministic", "[data]") {
  Dataset data = toy_dataset(37);
  const std::vector<Transform> transforms = {make(Transform::Scale, 1.0 / 255), crop(1), flip(0.5),
                                             normalize({0.1, 0.2}, {0.5, 0.25})};
  DataLoader sync(data, {.batch_size = 5, .shuffle = true, .seed = 11, .prefetch = 0}, transforms);
  DataLoader ahead(data, {.batch_size = 5, .shuffle = true, .seed = 11, .prefetch = 3}, transforms);
  for (int64_t epoch : {0, 1}) {
    auto a = epoch_batches(sync, epoch), b = epoch_batches(ahead, epoch);
    CHECK(a.size() == 8);
    CHECK(a == b);  // bit-identical
    auto resumed = epoch_batches(ahead, epoch, nullptr, 3);
    CHECK(resumed == std::vector<std::vector<float>>(a.begin() + 3, a.end()));
  }
  CHECK(epoch_batches(ahead, 0) != epoch_batches(ahead, 1));
  // Restarting mid-epoch (worker still running) is safe.
  ahead.start_epoch(2);
  CHECK(ahead.next()->index == 0);
  ahead.start_epoch(2, 7);
  auto last = ahead.next();
  REQUIRE(last);
  CHECK(last->index == 7);
  CHECK(last->x.shape() == pd::Shape{2, 2, 3, 4});
  CHECK(!ahead.next());
}

TEST_CASE("DataLoader: leading scale/normalize folded into the conversion match the transforms applied one by one", "[data]") {
  // Scale, per-channel normalize, a flip, then another scale after the random transform (not folded).
  const std::vector<Transform> ts = {make(Transform::Scale, 1.0 / 255), normalize({0.1, 0.2}, {0.5, 0.25}), flip(0.5),
                                     make(Transform::Scale, 3.0)};
  Dataset data = toy_dataset(9);
  DataLoader loader(data, {.batch_size = 9, .seed = 5, .prefetch = 0}, ts);
  loader.start_epoch(2);
  const std::vector<float> got = loader.next()->x.to_vector<float>();
  DataLoader plain(data, {.batch_size = 9, .seed = 5, .prefetch = 0});  // no transforms: the raw values
  plain.start_epoch(2);
  std::vector<float> want = plain.next()->x.to_vector<float>();
  bool flipped_some = false;
  for (int64_t i = 0; i < 9; ++i) {
    float* sample = want.data() + i * 24;
    const std::vector<float> before(sample, sample + 24);
    // The loader's seeds: sample index i (no shuffle), transform index t.
    for (size_t t = 0; t < ts.size(); ++t)
      pd::data::apply_transform(ts[t], sample, {2, 3, 4}, pd::data::transform_seed(5, 2, i, t));
    flipped_some |= (sample[0] - sample[3]) * (before[0] - before[3]) < 0;
  }
  CHECK(flipped_some);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-6).margin(1e-6));
}

TEST_CASE("apply_transform: flip, crop, normalize", "[data]") {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  pd::data::apply_transform(flip(1.0), x.data(), {2, 3}, 0);
  CHECK(x == std::vector<float>{3, 2, 1, 6, 5, 4});
  pd::data::apply_transform(flip(0.0), x.data(), {2, 3}, 0);
  CHECK(x == std::vector<float>{3, 2, 1, 6, 5, 4});
  pd::data::apply_transform(normalize({1, 2}, {2, 4}), x.data(), {2, 3}, 0);
  CHECK(x == std::vector<float>{1, 0.5f, 0, 1, 0.75f, 0.5f});

  // A crop keeps the size, keeps values or zero padding, and depends only on the seed.
  std::vector<float> img(16);
  std::iota(img.begin(), img.end(), 1.0f);
  std::set<std::vector<float>> seen;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto a = img, b = img;
    pd::data::apply_transform(crop(2), a.data(), {1, 4, 4}, seed);
    pd::data::apply_transform(crop(2), b.data(), {1, 4, 4}, seed);
    CHECK(a == b);
    for (float v : a) CHECK((v >= 0 && v <= 16));
    seen.insert(a);
  }
  CHECK(seen.size() > 5);
  CHECK_THROWS_AS(pd::data::apply_transform(crop(1), x.data(), {6}, 0),
                  pd::Error);
  CHECK_THROWS_AS(DataLoader(toy_dataset(2), {}, {normalize({0, 0, 0}, {1})}),
                  pd::Error);
}
