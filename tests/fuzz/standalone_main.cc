// Runs a fuzz target without libFuzzer (the gcc build and CI): every seed, the empty input, then a fixed
// number of deterministic mutations of the seeds. Same seed, same inputs, on every machine.
//
//   fuzz_npy [--mutations N] [--seed S] [--timeout SECONDS] CORPUS_DIR_OR_FILE...
//
// An input that escapes with an exception other than the target's expected error, crashes, or runs past
// the timeout is written to crash-TARGET-<pid> in the working directory (or $PD_FUZZ_ARTIFACTS) and the
// run exits non-zero. Feed that file back to reproduce it: `fuzz_npy crash-fuzz_npy-1234`.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Present only in sanitized builds: an ASan report ends the process through _exit, not a signal, so the
// input is saved from this callback.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
// GCC's UBSan runtime is separate from ASan's and does not run that callback: it aborts instead (after
// its report), and the SIGABRT handler saves the input. Read by the UBSan runtime at start-up.
extern "C" const char* __ubsan_default_options();
extern "C" const char* __ubsan_default_options() { return "abort_on_error=1"; }

namespace {

namespace fs = std::filesystem;

// What the signal handlers need, set before each run: only async-signal-safe calls use them.
const std::string* g_input = nullptr;
char g_artifact[4096];

void save_input(const char* why) {
  const int fd = ::open(g_artifact, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && g_input) {
    ssize_t ignored = ::write(fd, g_input->data(), g_input->size());
    (void)ignored;
    ::close(fd);
  }
  const char* parts[] = {"pd-fuzz: ", why, "; the input is in ", g_artifact, "\n"};
  for (const char* p : parts) {
    ssize_t ignored = ::write(2, p, std::strlen(p));
    (void)ignored;
  }
}

void on_signal(int sig) {
  save_input(sig == SIGALRM ? "timeout" : "crash (fatal signal)");
  if (sig == SIGALRM) ::_exit(1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// splitmix64: a tiny generator whose sequence is the same everywhere (std:: distributions are not).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

// Values that sit on the edges of size checks, as text and as little- and big-endian integers.
const char* const kTokens[] = {"0", "-1", "1", "65536", "4294967295", "9223372036854775807", "99999999999999999999",
                               "1e308", "nan", "-inf", "[", "]", "{", "}", ",", ":", "\"", "'", "\n", "%", "x", "="};
const uint64_t kInts[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
                          1ull << 40, 0x7fffffffffffffffull, ~0ull};

void mutate_once(std::string& s, const std::vector<std::string>& seeds, Rng& rng) {
  const size_t n = s.size();
  switch (rng.below(9)) {
    case 0:  // flip a bit
      if (n) s[rng.below(n)] ^= static_cast<char>(1u << rng.below(8));
      break;
    case 1:  // set a byte to an edge value
      if (n) s[rng.below(n)] = static_cast<char>(kInts[rng.below(5)] & 0xff);
      break;
    case 2: {  // delete a range
      if (!n) break;
      const size_t at = rng.below(n);
      s.erase(at, 1 + rng.below(std::min<size_t>(16, n - at)));
      break;
    }
    case 3: {  // insert random bytes
      std::string ins(1 + rng.below(8), '\0');
      for (char& c : ins) c = static_cast<char>(rng.next());
      s.insert(rng.below(n + 1), ins);
      break;
    }
    case 4:  // insert a token
      s.insert(rng.below(n + 1), kTokens[rng.below(std::size(kTokens))]);
      break;
    case 5:  // truncate
      s.resize(rng.below(n + 1));
      break;
    case 6: {  // copy a chunk elsewhere
      if (!n) break;
      const size_t from = rng.below(n), len = 1 + rng.below(std::min<size_t>(64, n - from));
      s.insert(rng.below(n + 1), s.substr(from, len));
      break;
    }
    case 7: {  // splice with another seed
      const std::string& other = seeds[rng.below(seeds.size())];
      s = s.substr(0, rng.below(n + 1)) + other.substr(rng.below(other.size() + 1));
      break;
    }
    case 8: {  // overwrite 4 or 8 bytes with an edge integer, either byte order
      const size_t width = rng.below(2) ? 8 : 4;
      if (n < width) break;
      const uint64_t v = kInts[rng.below(std::size(kInts))];
      const bool big = rng.below(2);
      const size_t at = rng.below(n - width + 1);
      for (size_t i = 0; i < width; ++i) {
        const size_t shift = 8 * (big ? width - 1 - i : i);
        s[at + i] = static_cast<char>(shift < 64 ? (v >> shift) & 0xff : 0);
      }
      break;
    }
  }
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] [--timeout SECONDS] CORPUS_DIR_OR_FILE...\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string target = fs::path(argv[0]).filename().string();
  uint64_t mutations = 0, seed = 1;
  unsigned timeout = 20;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--mutations" || a == "--seed" || a == "--timeout") && i + 1 < argc) {
      const uint64_t v = std::strtoull(argv[++i], nullptr, 10);
      if (a == "--mutations") mutations = v;
      else if (a == "--seed") seed = v;
      else timeout = static_cast<unsigned>(v);
    } else if (a.rfind("--", 0) == 0) {
      return usage(argv[0]);
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(a)) {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "%s: no such corpus file or directory: %s\n", target.c_str(), a.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // directory order differs between machines
  std::vector<std::string> seeds;
  for (const auto& f : files) seeds.push_back(read_all(f));
  seeds.push_back("");
  size_t max_len = 64;
  for (const auto& s : seeds) max_len = std::max(max_len, 2 * s.size() + 64);

  const char* dir = std::getenv("PD_FUZZ_ARTIFACTS");
  std::snprintf(g_artifact, sizeof(g_artifact), "%s/crash-%s-%d", dir ? dir : ".", target.c_str(), ::getpid());
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL, SIGALRM}) ::signal(sig, on_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback([] { save_input("sanitizer report"); });

  const auto start = std::chrono::steady_clock::now();
  auto run_one = [&](const std::string& input) {
    g_input = &input;
    ::alarm(timeout);
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pd-fuzz: %s: uncaught exception: %s\n", target.c_str(), e.what());
      save_input("uncaught exception");
      std::exit(1);
    } catch (...) {
      save_input("uncaught exception of a type not derived from std::exception");
      std::exit(1);
    }
    ::alarm(0);
  };
  for (const auto& s : seeds) run_one(s);
  Rng rng{seed};
  std::string input;
  for (uint64_t m = 0; m < mutations; ++m) {
    input = seeds[rng.below(seeds.size())];
    for (size_t k = 1 + rng.below(3); k > 0; --k) mutate_once(input, seeds, rng);
    if (input.size() > max_len) input.resize(max_len);
    run_one(input);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const pd_fuzz::Outcomes& o = pd_fuzz::outcomes();
  std::printf("%s: %zu seeds + %llu mutations in %.2f s: %llu accepted, %llu refused with the expected error, 0 failures\n",
              target.c_str(), seeds.size(), static_cast<unsigned long long>(mutations), secs,
              static_cast<unsigned long long>(o.accepted), static_cast<unsigned long long>(o.refused));
  return 0;
}
