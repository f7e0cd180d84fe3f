// The tensor archive format (all integers little-endian):
//   "PDTENSOR" u32 version u32 n_meta {u32 len, key, u32 len, value}*
//   u32 n_tensors {u32 len, name, u8 dtype, u32 ndim, i64 dims[ndim], u64 nbytes, u64 fnv1a64(data), data}*
//   u64 fnv1a64(everything above)
#include "pd/io/tensor_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "pd/core/tensor_inl.h"

namespace pd::io {
namespace {

static_assert(std::endian::native == std::endian::little, "tensor data is written in host order");
constexpr char kMagic[8] = {'P', 'D', 'T', 'E', 'N', 'S', 'O', 'R'};

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_str(std::string& out, const std::string& s, const std::string& path, const char* what) {
  PD_CHECK(s.size() <= std::numeric_limits<uint32_t>::max(), ErrorCode::kInvalidArgument,
           "{}: {} is too long ({} bytes)", path, what, s.size());
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Bounds-checked reader: every length is checked against what is left before it is used, so a
// corrupted length can neither read past the end nor make us allocate a huge buffer.
class Reader {
 public:
  Reader(const std::string& path, const std::string& data) : path_(path), data_(data) {}
  size_t pos() const { return pos_; }
  size_t left() const { return data_.size() - pos_; }
  void need(uint64_t n, const char* what) const {
    PD_CHECK(n <= left(), ErrorCode::kParse, "{}: truncated file: {} needs {} bytes at offset {}, but only {} remain",
             path_, what, n, pos_, left());
  }
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* take(uint64_t n, const char* what) {
    need(n, what);
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::string str(const char* what) {
    uint32_t n = get<uint32_t>(what);
    return std::string(take(n, what), n);
  }

 private:
  const std::string& path_;
  const std::string& data_;
  size_t pos_ = 0;
};


}  // namespace

std::string read_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PD_CHECK(fd >= 0, ErrorCode::kIO, "{}: cannot open for reading: {}", path, std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      raise(ErrorCode::kIO, "{}: read failed: {}", path, std::strerror(err));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

uint64_t fnv1a64(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string encode_tensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kTensorFileVersion);
  put<uint32_t>(out, static_cast<uint32_t>(metadata.size()));
  for (const auto& [key, value] : metadata) {
    put_str(out, key, path, "metadata key");
    put_str(out, value, path, "metadata value");
  }
  put<uint32_t>(out, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    PD_CHECK(t.defined(), ErrorCode::kInvalidArgument, "{}: tensor '{}' is undefined", path, name);
    Tensor c = t.place().is_cpu() ? t.contiguous() : t.to(Place::cpu());  // device tensors are saved from a host copy
    const size_t nbytes = static_cast<size_t>(c.numel()) * dtype_size(c.dtype());
    const char* bytes = nbytes ? static_cast<const char*>(c.raw_data()) : "";
    put_str(out, name, path, "tensor name");
    put<uint8_t>(out, static_cast<uint8_t>(c.dtype()));
    put<uint32_t>(out, static_cast<uint32_t>(c.dim()));
    for (int64_t d : c.shape()) put<int64_t>(out, d);
    put<uint64_t>(out, nbytes);
    put<uint64_t>(out, fnv1a64(bytes, nbytes));
    out.append(bytes, nbytes);
  }
  put<uint64_t>(out, fnv1a64(out.data(), out.size()));
  return out;
}

void save_tensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                  const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode_tensors(path, tensors, metadata));
}

TensorArchive load_tensors(const std::string& path) { return parse_tensors(read_file_bytes(path), path); }

TensorArchive parse_tensors(const std::string& data, const std::string& path) {
  // A short prefix of the magic is a truncated archive; anything else is some other file.
  const size_t head = std::min(data.size(), sizeof(kMagic));
  PD_CHECK(std::memcmp(data.data(), kMagic, head) == 0, ErrorCode::kParse,
           "{}: not a paddle-cpp tensor file (bad magic)", path);
  PD_CHECK(data.size() >= sizeof(kMagic), ErrorCode::kParse, "{}: truncated file ({} bytes)", path, data.size());
  Reader r(path, data);
  r.take(sizeof(kMagic), "magic");
  const uint32_t version = r.get<uint32_t>("format version");
  PD_CHECK(version <= kTensorFileVersion, ErrorCode::kParse,
           "{}: written by a newer paddle-cpp (format version {}, this build reads up to {})", path, version,
           kTensorFileVersion);
  PD_CHECK(version >= 1, ErrorCode::kParse, "{}: invalid format version {}", path, version);

  TensorArchive archive;
  const uint32_t n_meta = r.get<uint32_t>("metadata count");
  for (uint32_t i = 0; i < n_meta; ++i) {
    std::string key = r.str("metadata key");
    std::string value = r.str("metadata value");
    PD_CHECK(archive.metadata.emplace(key, std::move(value)).second, ErrorCode::kParse,
             "{}: metadata key '{}' appears twice", path, key);
  }
  const uint32_t n_tensors = r.get<uint32_t>("tensor count");
  for (uint32_t i = 0; i < n_tensors; ++i) {
    std::string name = r.str("tensor name");
    const uint8_t code = r.get<uint8_t>("dtype");
    PD_CHECK(code < kNumDTypes, ErrorCode::kParse, "{}: tensor '{}' has an invalid dtype code {}", path, name, code);
    const DType dtype = static_cast<DType>(code);
    const uint32_t ndim = r.get<uint32_t>("ndim");
    PD_CHECK(ndim <= kMaxRank, ErrorCode::kParse, "{}: tensor '{}' has rank {}, above the limit of {}", path, name,
             ndim, kMaxRank);
    r.need(uint64_t{ndim} * sizeof(int64_t), "dims");
    Shape shape(ndim);
    for (auto& d : shape) {
      d = r.get<int64_t>("dims");
      PD_CHECK(d >= 0, ErrorCode::kParse, "{}: tensor '{}' has a negative dimension {}", path, name, d);
    }
    try {
      check_shape_limits(shape, fmt::format("{}: tensor '{}'", path, name));
    } catch (const Error& e) {
      raise(ErrorCode::kParse, "{}", e.what());
    }
    const uint64_t nbytes = r.get<uint64_t>("nbytes");
    const uint64_t checksum = r.get<uint64_t>("checksum");
    r.need(nbytes, "tensor data");
    // nbytes is bounded by the file size, so comparing by division avoids any overflow in numel.
    const bool empty = std::count(shape.begin(), shape.end(), 0) > 0;
    uint64_t numel = empty ? 0 : 1;
    bool fits = true;
    for (int64_t d : shape) {
      if (empty) break;
      fits = fits && numel <= nbytes / static_cast<uint64_t>(d);
      if (fits) numel *= static_cast<uint64_t>(d);
    }
    PD_CHECK(fits && numel * dtype_size(dtype) == nbytes, ErrorCode::kParse,
             "{}: tensor '{}' ({}, shape {}) does not match its {} data bytes", path, name, dtype_name(dtype),
             shape_str(shape), nbytes);
    const char* bytes = r.take(nbytes, "tensor data");
    PD_CHECK(fnv1a64(bytes, nbytes) == checksum, ErrorCode::kParse, "{}: checksum mismatch in tensor '{}'", path, name);
    Tensor t;
    try {
      t = Tensor::empty(shape, dtype);
    } catch (const Error& e) {  // e.g. an empty shape whose other extents overflow int64
      raise(ErrorCode::kParse, "{}: tensor '{}': {}", path, name, e.what());
    }
    if (nbytes) std::memcpy(t.raw_data(), bytes, nbytes);
    PD_CHECK(archive.tensors.emplace(name, std::move(t)).second, ErrorCode::kParse,
             "{}: tensor '{}' appears twice", path, name);
  }
  const size_t body = r.pos();
  const uint64_t trailer = r.get<uint64_t>("trailer checksum");
  PD_CHECK(r.left() == 0, ErrorCode::kParse, "{}: {} unexpected bytes after the trailer", path, r.left());
  PD_CHECK(fnv1a64(data.data(), body) == trailer, ErrorCode::kParse,
           "{}: trailer checksum mismatch (the file is corrupted)", path);
  return archive;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  // A per-process counter keeps two threads saving the same path from sharing a temp file.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  auto fail = [&](int fd, const char* what) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    raise(ErrorCode::kIO, "{}: {} failed: {}", path, what, std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise(ErrorCode::kIO, "{}: cannot create temp file {}: {}", path, tmp, std::strerror(errno));
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(fd, "write");
    done += static_cast<size_t>(n);
  }
  // Data must be on disk before the rename makes it visible, or a crash could leave an empty PATH.
  if (::fsync(fd) != 0) fail(fd, "fsync");
  if (::close(fd) != 0) fail(-1, "close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(-1, "rename");
  // Persist the rename itself; best effort, as some file systems refuse fsync on directories.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace pd::io
