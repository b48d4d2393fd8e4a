#include "core/float_mode.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define TESSERA_HAVE_MXCSR 1
#endif

namespace tessera {

uint32_t float_mode() {
#if defined(TESSERA_HAVE_MXCSR)
  return _mm_getcsr();
#else
  return 0;
#endif
}

void set_float_mode(uint32_t mode) {
#if defined(TESSERA_HAVE_MXCSR)
  if (_mm_getcsr() != mode) _mm_setcsr(mode);
#else
  (void)mode;
#endif
}

FlushDenormalsScope::FlushDenormalsScope(bool on) : saved_(float_mode()), on_(on) {
#if defined(TESSERA_HAVE_MXCSR)
  constexpr uint32_t kFtz = 0x8000, kDaz = 0x0040;
  if (on_) set_float_mode(saved_ | kFtz | kDaz);
#endif
}

FlushDenormalsScope::~FlushDenormalsScope() {
  if (on_) set_float_mode(saved_);
}

}  // namespace tessera
