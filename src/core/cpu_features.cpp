#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <unistd.h>
#endif

namespace tessera {

namespace {
#if defined(__linux__)
// The size of cpu0's cache of this level from sysfs ("32768K"), or 0.
long sysfs_cache_bytes(int level) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream lv(dir + "level"), sz(dir + "size");
    int l = 0;
    std::string size;
    if (!(lv >> l) || l != level || !(sz >> size) || size.empty()) continue;
    const long n = std::strtol(size.c_str(), nullptr, 10);
    const char unit = size.back();
    return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
  }
  return 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d))  // vendor string in b, d, c: "Auth" "enti" "cAMD"
    f.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool has_fma = (c >> 12) & 1, has_f16c = (c >> 29) & 1;
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xE6) == 0xE6;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm_ok && ((b >> 5) & 1);
  f.fma = ymm_ok && has_fma;
  f.f16c = ymm_ok && has_f16c;
  f.avx512f = zmm_ok && ((b >> 16) & 1);
  f.avx512dq = zmm_ok && ((b >> 17) & 1);
  f.avx512bw = zmm_ok && ((b >> 30) & 1);
  f.avx512vl = zmm_ok && ((b >> 31) & 1);
  f.avx512vnni = zmm_ok && ((c >> 11) & 1);
  f.avx512vbmi = zmm_ok && ((c >> 1) & 1);
  const bool tiles_ok = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.amx_bf16 = zmm_ok && tiles_ok && ((d >> 24) & 1) && ((d >> 22) & 1);
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx512bf16 = zmm_ok && ((a1 >> 5) & 1);
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
  if (const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0) f.l2_bytes = l2;
#endif
#if defined(__linux__)
  // sysfs, as lscpu: glibc's _SC_LEVEL3_CACHE_SIZE reported 320 MiB on a VM whose L3 is 32 MiB
  if (const long l3 = sysfs_cache_bytes(3); l3 > 0) f.l3_bytes = l3;
#endif
#if defined(TESSERA_EMULATE_AVX512)
  // testing build: the AVX-512 kernels run on SIMDe over AVX2 (CMake option TESSERA_EMULATE_AVX512)
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx2 && f.fma;
#endif
  if (const char* isa = std::getenv("TESSERA_ISA")) {
    if (std::strcmp(isa, "portable") == 0)
      f = CpuFeatures{};
    else if (std::strcmp(isa, "avx2") == 0) {
      f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = f.avx512bf16 = f.avx512vbmi =
          f.amx_bf16 = false;
    }
  }
  return f;
}
}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += n;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avx512vbmi, "avx512vbmi");
  return s.empty() ? "portable" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace tessera
