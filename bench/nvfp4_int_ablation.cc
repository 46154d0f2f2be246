// Ablation of the NVFP4 integer decode step (src/kernels/nvfp4_gemv_int-inl.h), standalone, not built
// by CMake: which parts of a 128-element step cost what with W and x in L1 on one thread.
// Variants: full (the kernel's step), noscale (no block scales: convert and add), lo-only (one x
// bit plane), hadd (block sums by vphaddd, one convert and FMA), deconly (nibble decode only),
// nodecode (W bytes used as codes: all multiplies, no decode), mulonly (the 18 multiplies alone).
//   g++ -O2 -mavx2 -mfma -o /tmp/abl bench/nvfp4_int_ablation.cc && /tmp/abl 8 20000
// Results and what they mean: bench/2026-11-30-moe-small-c16-profile.txt.
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
struct alignas(32) PreparedStep { uint8_t x[2][6][32]; int32_t c[2][8]; float step[8]; };
static const int8_t kU[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
struct Consts {
  __m256i table, mask, ones, k256, idx0, idx1, e4m3_bits; __m256 e4m3_unit;
  Consts() {
    table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)kU));
    mask = _mm256_set1_epi8(0x0f); ones = _mm256_set1_epi16(1); k256 = _mm256_set1_epi16(256);
    idx0 = _mm256_setr_epi32(0,0,1,1,2,2,3,3); idx1 = _mm256_setr_epi32(4,4,5,5,6,6,7,7);
    e4m3_bits = _mm256_set1_epi32(int32_t(0x87F00000u)); e4m3_unit = _mm256_set1_ps(0x1p120f);
  }
};
// The kernel's three x bit planes against u (even and odd elements).
static inline __m256i Planes(const Consts& c, __m256i ue, __m256i uo, const uint8_t (*x)[32], const int32_t* corr) {
  auto ld = [&](int i) { return _mm256_load_si256((const __m256i*)x[i]); };
  const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(ld(0), ue), _mm256_maddubs_epi16(ld(3), uo));
  const __m256i mid = _mm256_add_epi16(_mm256_maddubs_epi16(ld(1), ue), _mm256_maddubs_epi16(ld(4), uo));
  const __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(ue, ld(2)), _mm256_maddubs_epi16(uo, ld(5)));
  const __m256i top = _mm256_add_epi32(_mm256_madd_epi16(hi, c.k256), _mm256_madd_epi16(mid, c.ones));
  const __m256i d = _mm256_add_epi32(_mm256_slli_epi32(top, 8), _mm256_madd_epi16(lo, c.ones));
  return _mm256_sub_epi32(d, _mm256_load_si256((const __m256i*)corr));
}
template <int V>
static inline __m256i GroupSums(const Consts& c, __m256i w, const uint8_t (*x)[32], const int32_t* corr) {
  const __m256i ue = _mm256_shuffle_epi8(c.table, _mm256_and_si256(w, c.mask));
  const __m256i uo = _mm256_shuffle_epi8(c.table, _mm256_and_si256(_mm256_srli_epi16(w, 4), c.mask));
  auto ld = [&](int i) { return _mm256_load_si256((const __m256i*)x[i]); };
  if (V == 4) {  // decode only
    return _mm256_add_epi32(ue, uo);
  }
  if (V == 5) return Planes(c, _mm256_and_si256(w, c.mask), w, x, corr);  // no decode: W bytes as u (all the multiplies)
  if (V == 6) {  // multiplies only: 6 maddubs 3 madd, no adds
    __m256i a = _mm256_maddubs_epi16(ld(0), w), b = _mm256_maddubs_epi16(ld(3), w), e = _mm256_maddubs_epi16(ld(1), w);
    __m256i f = _mm256_maddubs_epi16(ld(4), w), g = _mm256_maddubs_epi16(w, ld(2)), h = _mm256_maddubs_epi16(w, ld(5));
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(a, b), _mm256_madd_epi16(e, f)), _mm256_madd_epi16(g, h));
  }
  if (V == 2) {  // only lo plane
    const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(ld(0), ue), _mm256_maddubs_epi16(ld(3), uo));
    return _mm256_madd_epi16(lo, c.ones);
  }
  return Planes(c, ue, uo, x, corr);
}
static inline __m256 StepScales(const Consts& c, const uint8_t* scales, const float* xstep) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)scales));
  const __m256 s = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(v, 20), c.e4m3_bits));
  return _mm256_mul_ps(_mm256_mul_ps(s, c.e4m3_unit), _mm256_load_ps(xstep));
}
template <int V>
static inline __m256 StepDot(const Consts& c, const uint8_t* row, const uint8_t* scales, const PreparedStep& p, __m256 acc) {
  const __m256i d0 = GroupSums<V>(c, _mm256_loadu_si256((const __m256i*)row), p.x[0], p.c[0]);
  const __m256i d1 = GroupSums<V>(c, _mm256_loadu_si256((const __m256i*)(row + 32)), p.x[1], p.c[1]);
  if (V == 1 || V == 4 || V == 6) {  // no scales: just convert and add
    return _mm256_add_ps(acc, _mm256_cvtepi32_ps(_mm256_add_epi32(d0, d1)));
  }
  if (V == 3) {  // hadd: blocks [0,1,4,5 | 2,3,6,7]; scales pre-permuted (pretend)
    const __m256 s = StepScales(c, scales, p.step);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(d0, d1)), s, acc);
  }
  const __m256 s = StepScales(c, scales, p.step);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), _mm256_permutevar8x32_ps(s, c.idx0), acc);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(d1), _mm256_permutevar8x32_ps(s, c.idx1), acc);
}
template <int V>
__attribute__((noinline)) float Run(const Consts& c, const PreparedStep* steps, const uint8_t* w, const uint8_t* sc, int N, int S) {
  float tot = 0;
  for (int n = 0; n < N; ++n) {
    const uint8_t* r = w + size_t(n) * S * 64; const uint8_t* sr = sc + size_t(n) * S * 8;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int s = 0; s < S; s += 2) {
      a0 = StepDot<V>(c, r + s * 64, sr + s * 8, steps[s], a0);
      a1 = StepDot<V>(c, r + (s + 1) * 64, sr + (s + 1) * 8, steps[s + 1], a1);
    }
    __m256 a = _mm256_add_ps(a0, a1); float t[8]; _mm256_storeu_ps(t, a); tot += t[0] + t[3];
  }
  return tot;
}
int main(int argc, char** argv) {
  const int S = 8, N = atoi(argv[1]);  // K = 1024
  const int iters = atoi(argv[2]);
  static Consts c;
  PreparedStep* steps = (PreparedStep*)aligned_alloc(64, sizeof(PreparedStep) * S);
  memset(steps, 1, sizeof(PreparedStep) * S);
  for (int s = 0; s < S; ++s) for (int b = 0; b < 8; ++b) steps[s].step[b] = 1e-3f;
  uint8_t* w = (uint8_t*)aligned_alloc(64, size_t(N) * S * 64); uint8_t* sc = (uint8_t*)aligned_alloc(64, size_t(N) * S * 8);
  for (size_t i = 0; i < size_t(N) * S * 64; ++i) w[i] = rand();
  for (size_t i = 0; i < size_t(N) * S * 8; ++i) sc[i] = 0x30 + rand() % 16;
  const char* names[] = {"full", "noscale", "lo-only", "hadd", "deconly", "nodecode", "mulonly"};
  for (int rep = 0; rep < 3; ++rep)
  for (int v = 0; v < 7; ++v) {
    auto t0 = std::chrono::steady_clock::now(); float r = 0;
    for (int it = 0; it < iters; ++it) {
      if (v == 0) r += Run<0>(c, steps, w, sc, N, S);
      if (v == 1) r += Run<1>(c, steps, w, sc, N, S);
      if (v == 2) r += Run<2>(c, steps, w, sc, N, S);
      if (v == 3) r += Run<3>(c, steps, w, sc, N, S);
      if (v == 4) r += Run<4>(c, steps, w, sc, N, S);
      if (v == 5) r += Run<5>(c, steps, w, sc, N, S);
      if (v == 6) r += Run<6>(c, steps, w, sc, N, S);
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    double per_step = ns / (double(iters) * N * S);
    printf("%-8s %.2f ns/step  %.2f GB/s  (%g)\n", names[v], per_step, 72.0 / per_step, r);
  }
}
