// Full or masked vector access over an ISA's vector traits, for the kernels written once for several ISAs
// (dw3_rows_impl.h, wino_impl.h): FULL blocks use plain loads and stores, the channel tail the mask.
// V supplies vec, mask and load / store, each full and masked.
#pragma once

namespace tessera::kernels::x86::vec {

template <class V, bool FULL>
inline __attribute__((always_inline)) typename V::vec load(const float* p, typename V::mask m) {
  if constexpr (FULL)
    return V::load(p);
  else
    return V::load(p, m);
}

template <class V, bool FULL>
inline __attribute__((always_inline)) void store(float* p, typename V::mask m, typename V::vec v) {
  if constexpr (FULL)
    V::store(p, v);
  else
    V::store(p, m, v);
}

}  // namespace tessera::kernels::x86::vec
