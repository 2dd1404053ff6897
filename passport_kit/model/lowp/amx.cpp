// The encoder layer's feed-forward block fused on AMX, and a fast bf16 GELU (issue 36).
//
// Why: at inference each layer's feed-forward block ran as two oneDNN bf16 products, the first
// with an erf-GELU post-op that cost more than the product itself, and the (tokens, 800) bf16
// hidden activation written to memory and read back. Here (feed_forward) rows are taken in
// blocks: the block's two products run on the AMX tile unit (bf16 pairs summed in fp32), the
// first product's bias and GELU are applied to its fp32 accumulators and the block's hidden
// rows, rounded once to bf16, stay in the L1/L2 cache as the second product's input; the second
// product's bias and the residual are added to its fp32 accumulators and the sum is rounded once
// to bf16. The weights are packed once (pack_feed_forward_weight) into the tile layout below.
// The products around the attention are fused the same way (attention_input,
// attention_output_feed_forward), and criss_cross_layer runs a whole layer sample by sample with
// the same block routines and kernels.cpp's attention (sample_attention_run, declared in lowp.h).
//
// GELU: GELU(x) = x·Φ(x) with Φ the standard normal CDF. The result is rounded to bf16 (relative
// step 2^-8), so Φ needs ~1e-5 absolute accuracy, not erf's full fp32 accuracy: Φ is a cubic
// polynomial on each of 32 intervals of [-5.5, 5.5) (coefficients looked up by vpermt2ps),
// 0 below -5.5 and the last cubic (≈ 1 - 2e-8) above. |Φ error| < 3e-6 (tests/model/lowp/test_lowp_ffn.py).
// gelu_ is the same GELU as a separate in-place pass over a bf16 (or fp32) tensor (AVX-512F only, no AMX).
// The bf16 rounding (vcvtne2ps2bf16) is to nearest even and flushes subnormal results to 0.
//
// AMX: palette 1, all eight tiles 16 rows × 64 bytes: tmm0-3 four 16×16 fp32 accumulators
// (2 row tiles × 2 column tiles), tmm4-5 two A tiles (16 rows × 32 bf16), tmm6-7 two B tiles in
// VNNI layout (16 k-pairs × 16 columns × 2 bf16). The process asks the kernel for the tile data
// state once (arch_prctl ARCH_REQ_XCOMP_PERM); feed_forward refuses to run where the CPU lacks
// AMX-TILE/AMX-BF16 or the kernel refuses (amx_available() says which the Python side may call).
// Built with -mamx-tile -mamx-bf16 (build.py): GCC emits AMX only for the
// intrinsics here. Inference only: no autograd formula is registered.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "lowp.h"  // sample_attention_* (kernels.cpp); amx_usable, load_tile_config (defined below)

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Φ(x) ≈ c0 + u·(c1 + u·(c2 + u·c3)) on interval i = round(t), u = t - i ∈ [-0.5, 0.5], where
// t = (x + 5.5)/h - 0.5 and h = 11/32. Made offline with numpy and scipy: per interval a
// least-squares cubic on 64 Chebyshev nodes in u, reweighted 300 times (Lawson's iteration) towards
// the minimax cubic, rounded to fp32. Evaluated in fp32 the max |Φ error| is 2.6e-6 over [-12, 12].
//
//   lo, h = -5.5, 11 / 32; u = np.cos(np.pi * (np.arange(64) + 0.5) / 64) / 2; V = np.vander(u, 4, True)
//   for i in range(32):
//       y = scipy.special.ndtr(lo + (i + 0.5) * h + u * h); w = np.ones(64)
//       for _ in range(300):
//           c = np.linalg.lstsq(V * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
//           w *= np.abs(V @ c - y) + 1e-30; w /= w.sum()
//       # c[0..3] (as float32) -> kPhiC0[i] .. kPhiC3[i]
alignas(64) constexpr float kPhiC0[32] = {
    4.944369536e-08f, 3.100003028e-07f, 1.733446425e-06f, 8.649207302e-06f,
    3.853168164e-05f, 1.533700706e-04f, 5.458942614e-04f, 1.739245607e-03f,
    4.966290668e-03f, 1.272854488e-02f, 2.933689021e-02f, 6.094720960e-02f,
    1.144656092e-01f, 1.950692534e-01f, 3.030603826e-01f, 4.317688048e-01f,
    5.682312250e-01f, 6.969395876e-01f, 8.049307466e-01f, 8.855344057e-01f,
    9.390528202e-01f, 9.706631303e-01f, 9.872714281e-01f, 9.950336814e-01f,
    9.982607365e-01f, 9.994540811e-01f, 9.998466372e-01f, 9.999614954e-01f,
    9.999913573e-01f, 9.999982715e-01f, 9.999997020e-01f, 9.999999404e-01f,
};
alignas(64) constexpr float kPhiC1[32] = {
    9.365837883e-08f, 5.515572639e-07f, 2.885756885e-06f, 1.341412917e-05f,
    5.539957419e-05f, 2.032818011e-04f, 6.627427647e-04f, 1.919779810e-03f,
    4.941089544e-03f, 1.129960455e-02f, 2.296026610e-02f, 4.145403951e-02f,
    6.650213897e-02f, 9.479498863e-02f, 1.200653613e-01f, 1.351243407e-01f,
    1.351243407e-01f, 1.200653613e-01f, 9.479498863e-02f, 6.650213897e-02f,
    4.145403951e-02f, 2.296026610e-02f, 1.129960455e-02f, 4.941089544e-03f,
    1.919779810e-03f, 6.627427647e-04f, 2.032818011e-04f, 5.539957419e-05f,
    1.341412917e-05f, 2.885756885e-06f, 5.515572639e-07f, 9.365837883e-08f,
};
alignas(64) constexpr float kPhiC2[32] = {
    9.144947910e-08f, 4.991890137e-07f, 2.411028163e-06f, 1.029615851e-05f,
    3.884060789e-05f, 1.292789384e-04f, 3.790885094e-04f, 9.773354977e-04f,
    2.209142316e-03f, 4.360568244e-03f, 7.471197750e-03f, 1.100460999e-02f,
    1.369917952e-02f, 1.392398961e-02f, 1.056933869e-02f, 3.962768242e-03f,
    -3.962768242e-03f, -1.056933869e-02f, -1.392398961e-02f, -1.369917952e-02f,
    -1.100460999e-02f, -7.471197750e-03f, -4.360568244e-03f, -2.209142316e-03f,
    -9.773354977e-04f, -3.790885094e-04f, -1.292789384e-04f, -3.884060789e-05f,
    -1.029615851e-05f, -2.411028163e-06f, -4.991890137e-07f, -9.144947910e-08f,
};
alignas(64) constexpr float kPhiC3[32] = {
    5.329670927e-08f, 2.709573721e-07f, 1.211490485e-06f, 4.754803740e-06f,
    1.634042383e-05f, 4.900827116e-05f, 1.276862749e-04f, 2.870540193e-04f,
    5.510499468e-04f, 8.874355699e-04f, 1.158425701e-03f, 1.126924297e-03f,
    5.757502513e-04f, -4.917556071e-04f, -1.728229574e-03f, -2.565992065e-03f,
    -2.565992065e-03f, -1.728229574e-03f, -4.917556071e-04f, 5.757502513e-04f,
    1.126924297e-03f, 1.158425701e-03f, 8.874355699e-04f, 5.510499468e-04f,
    2.870540193e-04f, 1.276862749e-04f, 4.900827116e-05f, 1.634042383e-05f,
    4.754803740e-06f, 1.211490485e-06f, 2.709573721e-07f, 5.329670572e-08f,
};

constexpr float kPhiInvH = 32.0f / 11.0f;
constexpr float kPhiOffset = 5.5f * 32.0f / 11.0f - 0.5f;  // t = x·kPhiInvH + kPhiOffset
constexpr float kRoundMagic = 12582912.0f;                 // 1.5·2^23: t + it rounds t to an integer in the low bits

struct PhiTable {
  __m512 c0l, c0h, c1l, c1h, c2l, c2h, c3l, c3h;
};

inline PhiTable phi_table() {
  return {_mm512_load_ps(kPhiC0), _mm512_load_ps(kPhiC0 + 16), _mm512_load_ps(kPhiC1), _mm512_load_ps(kPhiC1 + 16),
          _mm512_load_ps(kPhiC2), _mm512_load_ps(kPhiC2 + 16), _mm512_load_ps(kPhiC3), _mm512_load_ps(kPhiC3 + 16)};
}

// GELU(x) = x·Φ(x) of 16 floats. NaN stays NaN, +inf gives +inf, -inf and x < -5.5 give 0.
inline __m512 gelu16(__m512 x, const PhiTable& tab) {
  // t below the table (x < -5.5, -inf) indexes garbage that the mask below zeroes; above it, t is
  // clamped to the last interval. min returns its second operand for a NaN t: NaN x gives x·Φ = NaN.
  const __m512 t = _mm512_min_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kPhiInvH), _mm512_set1_ps(kPhiOffset)),
                                 _mm512_set1_ps(31.49f));
  const __m512 m = _mm512_add_ps(t, _mm512_set1_ps(kRoundMagic));
  const __m512i idx = _mm512_castps_si512(m);  // low 5 bits: round(t), the interval
  const __m512 u = _mm512_sub_ps(t, _mm512_sub_ps(m, _mm512_set1_ps(kRoundMagic)));
  __m512 p = _mm512_permutex2var_ps(tab.c3l, idx, tab.c3h);
  p = _mm512_fmadd_ps(p, u, _mm512_permutex2var_ps(tab.c2l, idx, tab.c2h));
  p = _mm512_fmadd_ps(p, u, _mm512_permutex2var_ps(tab.c1l, idx, tab.c1h));
  p = _mm512_fmadd_ps(p, u, _mm512_permutex2var_ps(tab.c0l, idx, tab.c0h));
  const __mmask16 keep = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-0.5f), _CMP_NLT_UQ);  // x >= -5.5 (t in the table)
  return _mm512_maskz_mul_ps(keep, x, p);
}

inline __m512 bf16_to_f32(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

inline __m256i f32_to_bf16(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }

inline __mmask16 first_lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// ---------------------------------------------------------------------------------------------
// AMX availability: the CPU's AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22) and the
// kernel's permission for the tile data state, asked once per process.

// The kernel lists a CPU feature in /proc/cpuinfo only where it also supports it.
bool cpuinfo_has(const char* flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w;
    while (words >> w) {
      if (w == flag) return true;
    }
    return false;  // the first processor's flags
  }
  return false;
}

bool amx_check() {
  // PASSPORT_KIT_LOWP_NO_AMX=1 (any value but 0) acts as a CPU without AMX: the tests of the AVX-512 fallbacks.
  if (const char* off = std::getenv("PASSPORT_KIT_LOWP_NO_AMX"); off != nullptr && *off && std::string(off) != "0")
    return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
  if (!tile || !bf16 || !cpuinfo_has("amx_tile") || !cpuinfo_has("amx_bf16")) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

bool amx_ok() {
  static const bool ok = amx_check();  // thread-safe, once per process
  return ok;
}

bool amx_available() { return amx_ok(); }

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// All eight tiles 16 rows × 64 bytes.
const TileConfig& tile_config() {
  static const TileConfig cfg = [] {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
      c.colsb[i] = 64;
      c.rows[i] = 16;
    }
    return c;
  }();
  return cfg;
}

// ---------------------------------------------------------------------------------------------
// Packed weights: w (N, K) bf16 as nn.Linear holds it, i.e. Bᵀ of the product x wᵀ, as tiles
// (ceil(N/16), ceil(K/32), 16, 32): tile (n, k) is B's rows k·32 .. k·32+31 and columns
// n·16 .. n·16+15 in VNNI order, element [p][2c + j] = w[n·16 + c][k·32 + 2p + j] (0 past N or K).
// One column tile's K tiles are contiguous (1 KiB each), the order the product's k loop reads.

constexpr int64_t kTileElems = 16 * 32;

at::Tensor pack_feed_forward_weight(const at::Tensor& w_in) {
  TORCH_CHECK(w_in.scalar_type() == at::kBFloat16 && w_in.device().is_cpu() && w_in.dim() == 2,
              "pack_feed_forward_weight: expects a 2-d bf16 CPU tensor (out, in)");
  const at::Tensor w = w_in.contiguous();
  const int64_t n = w.size(0), k = w.size(1), nt = (n + 15) / 16, kt = (k + 31) / 32;
  at::Tensor out = at::zeros({nt, kt, 16, 32}, w.options());
  const auto* src = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  for (int64_t row = 0; row < n; ++row) {
    const int64_t ti = row / 16, c = row % 16;
    for (int64_t col = 0; col < k; ++col) {
      const int64_t tk = col / 32, p = (col % 32) / 2, j = col % 2;
      dst[(ti * kt + tk) * kTileElems + p * 32 + 2 * c + j] = src[row * k + col];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One unit of a product: C (32×32 fp32, row stride 32) = A Bᵀ for 32 rows of A (bf16, row stride
// lda elements, 32·kt columns read, zero-padded by the caller) and one or two column tiles of B
// (b0, b1: their packed K strips). With two == false only b0 is read and C's columns 16..31 are
// left as they were; with rows2 == false only A's first 16 rows are read and C's rows 16..31 are
// left as they were (a block's last 1..16 rows: half the tile work). between(k) runs after the
// k-th step's tile products are issued: the previous unit's vector epilogue, in slices, so that
// it runs while the tile unit computes.

template <bool two, bool rows2, typename Between>
inline void tile_unit(const uint16_t* a, int64_t lda, const uint16_t* b0, const uint16_t* b1, int64_t kt, float* c,
                      Between&& between) {
  _tile_zero(0);
  if (rows2) _tile_zero(2);
  if (two) {
    _tile_zero(1);
    if (rows2) _tile_zero(3);
  }
  const int64_t stride = lda * 2;
  for (int64_t k = 0; k < kt; ++k) {
    _tile_loadd(4, a + k * 32, stride);
    _tile_loadd(6, b0 + k * kTileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    if (rows2) {
      _tile_loadd(5, a + 16 * lda + k * 32, stride);
      _tile_dpbf16ps(2, 5, 6);
    }
    if (two) {
      _tile_loadd(7, b1 + k * kTileElems, 64);
      _tile_dpbf16ps(1, 4, 7);
      if (rows2) _tile_dpbf16ps(3, 5, 7);
    }
    between(k);
  }
  _tile_stored(0, c, 128);
  if (rows2) _tile_stored(2, c + 16 * 32, 128);
  if (two) {
    _tile_stored(1, c + 16, 128);
    if (rows2) _tile_stored(3, c + 16 * 32 + 16, 128);
  }
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
std::unique_ptr<T[], AlignedFree> aligned_zeros(int64_t n) {
  const size_t bytes = size_t(round_up(std::max<int64_t>(n, 1) * int64_t(sizeof(T)), 64));
  void* p = std::aligned_alloc(64, bytes);
  TORCH_CHECK(p != nullptr, "feed_forward: out of memory");
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], AlignedFree>(static_cast<T*>(p));
}

// Rows per block: 32 (one pair of row tiles). 64 and 128 (a column pair's B strip read again
// from L1 for the block's next 32 rows) measured no faster on the AMX Xeon (their A block and B
// strip no longer fit L1 together), nor did prefetching the next B strip.
constexpr int64_t kPairsPerBlock = 1;
constexpr int64_t kBlockRows = 32 * kPairsPerBlock;

// A unit of work: rows rp·32 .. rp·32+31 of the block, columns n·16 .. n·16+31 (or +15 without two).
struct Unit {
  int64_t n = -1, rp = 0;
  bool two = false;
  float* c = nullptr;  // its accumulators
};

// Runs the units (n, rp) of a product over the block, n in steps of two column tiles (outer) and
// rp (inner, so a column pair's B strip is read from L1 again), each unit's epilogue(unit, lo, hi)
// over its rows lo..hi-1 overlapped with the next unit's tile products. cbuf: two 32×32 buffers.
// rows: the block's real rows (rows > 32·(pairs - 1)); where the last pair has 16 or fewer, its
// units run on one row tile (their C rows 16..31 are stale: the epilogues read rows < rows only,
// or write rows nobody reads).
template <typename Epilogue>
inline void run_product(const uint16_t* a, int64_t lda, const uint16_t* w, int64_t nt, int64_t kt, int64_t pairs,
                        float* cbuf, Epilogue&& epilogue, int64_t rows = -1) {
  Unit prev;
  int slot = 0;
  const int64_t step = (32 + kt - 1) / kt;  // epilogue rows per k step
  const bool half_last = rows > 0 && rows - 32 * (pairs - 1) <= 16;
  for (int64_t n = 0; n < nt; n += 2) {
    const uint16_t* b0 = w + n * kt * kTileElems;
    for (int64_t rp = 0; rp < pairs; ++rp) {
      Unit cur{n, rp, n + 1 < nt, cbuf + slot * 32 * 32};
      auto between = [&](int64_t k) {
        if (prev.n >= 0) epilogue(prev, std::min<int64_t>(32, k * step), std::min<int64_t>(32, (k + 1) * step));
      };
      const uint16_t* ar = a + rp * 32 * lda;
      const uint16_t* b1 = cur.two ? b0 + kt * kTileElems : b0;
      if (half_last && rp == pairs - 1) {
        if (cur.two) {
          tile_unit<true, false>(ar, lda, b0, b1, kt, cur.c, between);
        } else {
          tile_unit<false, false>(ar, lda, b0, b1, kt, cur.c, between);
        }
      } else if (cur.two) {
        tile_unit<true, true>(ar, lda, b0, b1, kt, cur.c, between);
      } else {
        tile_unit<false, true>(ar, lda, b0, b1, kt, cur.c, between);
      }
      prev = cur;
      slot ^= 1;
    }
  }
  epilogue(prev, 0, 32);
}

// The feed-forward block's packed weights and fp32 biases (zero past F and D), shared by
// feed_forward and attention_output_feed_forward.
struct Ffn {
  int64_t d = 0, f = 0, k1t = 0, n1t = 0, k2t = 0, n2t = 0, k1p = 0, hp = 0;
  const uint16_t* w1 = nullptr;
  const uint16_t* w2 = nullptr;
  std::unique_ptr<float[], AlignedFree> bias1, bias2;
};

Ffn ffn_setup(const char* op, int64_t d, const at::Tensor& w1p, const at::Tensor& b1, const at::Tensor& w2p,
              const at::Tensor& b2) {
  for (const at::Tensor* t : {&w1p, &b1, &w2p, &b2}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), op, ": expects bf16 CPU tensors");
  }
  Ffn p;
  p.d = d;
  p.f = b1.numel();
  TORCH_CHECK(d > 0 && p.f > 0 && b2.numel() == d && b1.dim() == 1 && b2.dim() == 1, op, ": b1 (F,), b2 (D,)");
  p.k1t = (d + 31) / 32, p.n1t = (p.f + 15) / 16, p.k2t = (p.f + 31) / 32, p.n2t = (d + 15) / 16;
  TORCH_CHECK(w1p.dim() == 4 && w1p.size(0) == p.n1t && w1p.size(1) == p.k1t && w1p.size(2) == 16 &&
                  w1p.size(3) == 32 && w1p.is_contiguous(),
              op, ": w1p must be pack_feed_forward_weight of linear1's (F, D) weight");
  TORCH_CHECK(w2p.dim() == 4 && w2p.size(0) == p.n2t && w2p.size(1) == p.k2t && w2p.size(2) == 16 &&
                  w2p.size(3) == 32 && w2p.is_contiguous(),
              op, ": w2p must be pack_feed_forward_weight of linear2's (D, F) weight");
  p.k1p = p.k1t * 32, p.hp = p.k2t * 32;  // padded widths of the A block and of the hidden block
  p.bias1 = aligned_zeros<float>(p.n1t * 16 + 16);
  p.bias2 = aligned_zeros<float>(p.n2t * 16 + 16);
  const at::Tensor b1c = b1.contiguous(), b2c = b2.contiguous();
  const auto* p1 = reinterpret_cast<const uint16_t*>(b1c.data_ptr<at::BFloat16>());
  const auto* p2 = reinterpret_cast<const uint16_t*>(b2c.data_ptr<at::BFloat16>());
  for (int64_t i = 0; i < p.f; ++i) p.bias1[i] = c10::detail::f32_from_bits(p1[i]);
  for (int64_t i = 0; i < d; ++i) p.bias2[i] = c10::detail::f32_from_bits(p2[i]);
  p.w1 = reinterpret_cast<const uint16_t*>(w1p.data_ptr<at::BFloat16>());
  p.w2 = reinterpret_cast<const uint16_t*>(w2p.data_ptr<at::BFloat16>());
  return p;
}

// One block's feed-forward block: a (the block's normalized rows, k1p wide, zero-padded) through
// product 1, bias and GELU into hid (bf16, never written out), then product 2, bias and
// residual(r, c0, mask) (the residual's 16 values at block row r, columns c0.. as fp32) into the
// block's output rows dst (row stride d); nr of the block's rows are real.
template <typename Residual>
inline void ffn_block(const Ffn& p, const uint16_t* a, uint16_t* hid, float* cbuf, const PhiTable& tab, int64_t nr,
                      uint16_t* dst, Residual&& residual) {
  const int64_t pairs = (nr + 31) / 32, d = p.d, hp = p.hp;
  const float* bb1 = p.bias1.get();
  const float* bb2 = p.bias2.get();
  // Product 1, bias and GELU into the block's real hidden rows (rows past nr keep an earlier
  // block's values: product 2 reads them only into output rows that are not written).
  auto gelu_epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
    const __m512 bl = _mm512_load_ps(bb1 + u.n * 16), bh = _mm512_load_ps(bb1 + u.n * 16 + 16);
    hi = std::min(hi, nr - u.rp * 32);
    for (int64_t r = lo; r < hi; ++r) {
      const float* cr = u.c + r * 32;
      const __m512 g0 = gelu16(_mm512_add_ps(_mm512_load_ps(cr), bl), tab);
      uint16_t* hr = hid + (u.rp * 32 + r) * hp + u.n * 16;
      if (u.two) {
        const __m512 g1 = gelu16(_mm512_add_ps(_mm512_load_ps(cr + 16), bh), tab);
        _mm512_store_si512(hr, (__m512i)_mm512_cvtne2ps_pbh(g1, g0));
      } else {
        _mm256_store_si256(reinterpret_cast<__m256i*>(hr), f32_to_bf16(g0));
      }
    }
  };
  run_product(a, p.k1p, p.w1, p.n1t, p.k1t, pairs, cbuf, gelu_epilogue, nr);
  // Product 2, bias and residual into the output rows.
  auto residual_epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
    const int64_t c0 = u.n * 16;
    const __mmask16 m0 = first_lanes(d - c0), m1 = u.two ? first_lanes(d - c0 - 16) : __mmask16(0);
    const __m512 bl = _mm512_load_ps(bb2 + c0), bh = _mm512_load_ps(bb2 + c0 + 16);
    hi = std::min(hi, nr - u.rp * 32);
    for (int64_t r = lo; r < hi; ++r) {
      const float* cr = u.c + r * 32;
      const int64_t row = u.rp * 32 + r;
      uint16_t* yr = dst + row * d + c0;
      const __m512 v0 = residual(row, c0, m0);
      _mm256_mask_storeu_epi16(yr, m0, f32_to_bf16(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr), bl), v0)));
      if (m1) {
        const __m512 v1 = residual(row, c0 + 16, m1);
        _mm256_mask_storeu_epi16(yr + 16, m1,
                                 f32_to_bf16(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr + 16), bh), v1)));
      }
    }
  };
  run_product(hid, hp, p.w2, p.n2t, p.k2t, pairs, cbuf, residual_epilogue, nr);
}

// out = x1 + GELU(h2 W1ᵀ + b1) W2ᵀ + b2 over rows of d columns (bf16, row-major, contiguous).
at::Tensor feed_forward(const at::Tensor& h2_in, const at::Tensor& x1_in, const at::Tensor& w1p, const at::Tensor& b1,
                        const at::Tensor& w2p, const at::Tensor& b2) {
  TORCH_CHECK(amx_ok(), "feed_forward: this CPU or kernel gives no AMX (check amx_available() first)");
  for (const at::Tensor* t : {&h2_in, &x1_in}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), "feed_forward: expects bf16 CPU tensors");
  }
  TORCH_CHECK(h2_in.dim() >= 1 && h2_in.sizes() == x1_in.sizes(), "feed_forward: h2 and x1 must have the same shape");
  const int64_t d = h2_in.size(-1);
  const Ffn p = ffn_setup("feed_forward", d, w1p, b1, w2p, b2);
  const at::Tensor h2 = h2_in.contiguous(), x1 = x1_in.contiguous();
  at::Tensor out = at::empty_like(h2);
  const int64_t rows = h2.numel() / d;
  if (rows == 0) return out;
  const auto* src = reinterpret_cast<const uint16_t*>(h2.data_ptr<at::BFloat16>());
  const auto* res = reinterpret_cast<const uint16_t*>(x1.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows, k1p = p.k1p;

  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    auto a = aligned_zeros<uint16_t>(kBlockRows * k1p);   // the block's h2 rows, zero-padded to k1p columns
    auto hid = aligned_zeros<uint16_t>(kBlockRows * p.hp);  // the block's hidden rows (bf16), never written out
    auto cbuf = aligned_zeros<float>(2 * 32 * 32);        // two 32×32 fp32 accumulator units
    const PhiTable tab = phi_table();
    _tile_loadconfig(&tile_config());
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
      const int64_t pairs = (nr + 31) / 32;
      for (int64_t r = 0; r < nr; ++r) std::memcpy(a.get() + r * k1p, src + (r0 + r) * d, size_t(d) * 2);
      if (nr < pairs * 32) std::memset(a.get() + nr * k1p, 0, size_t((pairs * 32 - nr) * k1p) * 2);
      const uint16_t* xb = res + r0 * d;
      ffn_block(p, a.get(), hid.get(), cbuf.get(), tab, nr, dst + r0 * d, [&](int64_t r, int64_t c0, __mmask16 m) {
        return bf16_to_f32(_mm256_maskz_loadu_epi16(m, xb + r * d + c0));
      });
    }
    _tile_release();
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// The products around the attention (attention_input, attention_output_feed_forward).
//
// The layer's q/k/v and output projections are block-diagonal over its two halves (spatial:
// columns :E, temporal: E:). oneDNN ran them as one (6E, 2E) and one (2E, 2E) product, half of
// whose multiplications are by the zero blocks; here each half is its own product on AMX tiles,
// K = E padded to whole 32-column tiles (100 -> 128), and the LayerNorms around them, the output
// projection's residual and the feed-forward block run on the same 32-row block while it is in
// the L1/L2 cache: x1 and the LayerNorms' outputs are never written to memory.
//
// Packed attention weights (pack_attention_weight): w (2N, 2K) block-diagonal (rows :N read
// columns :K, rows N: read K:; the off-diagonal blocks must be zero) as (2, ceil(N/16),
// ceil(K/32), 16, 32): [h] is pack_feed_forward_weight's layout of the diagonal block h.

at::Tensor pack_attention_weight(const at::Tensor& w_in) {
  TORCH_CHECK(w_in.scalar_type() == at::kBFloat16 && w_in.device().is_cpu() && w_in.dim() == 2 &&
                  w_in.size(0) % 2 == 0 && w_in.size(1) % 2 == 0 && w_in.size(0) > 0 && w_in.size(1) > 0,
              "pack_attention_weight: expects a 2-d bf16 CPU tensor (2N, 2K)");
  const int64_t n = w_in.size(0) / 2, k = w_in.size(1) / 2;
  TORCH_CHECK(!w_in.slice(0, 0, n).slice(1, k).any().item<bool>() && !w_in.slice(0, n).slice(1, 0, k).any().item<bool>(),
              "pack_attention_weight: the off-diagonal blocks of the (2N, 2K) weight must be zero");
  return at::stack({pack_feed_forward_weight(w_in.slice(0, 0, n).slice(1, 0, k)),
                    pack_feed_forward_weight(w_in.slice(0, n).slice(1, k))});
}

// fp32 copy of a bf16 vector (weight or bias) of n values, zero-padded by at least 32.
std::unique_ptr<float[], AlignedFree> widen_vector(const at::Tensor& t, int64_t n) {
  auto out = aligned_zeros<float>(round_up(n, 32) + 32);
  const at::Tensor c = t.contiguous();
  const auto* p = reinterpret_cast<const uint16_t*>(c.data_ptr<at::BFloat16>());
  for (int64_t i = 0; i < n; ++i) out[i] = c10::detail::f32_from_bits(p[i]);
  return out;
}

// LayerNorm of nr fp32 rows xf (row stride ldx, d columns) with fp32 statistics, as layer_norm:
// mean, the mean of the centred squares, (x - mean)·rstd·γ + β rounded once to bf16. Columns
// [0, split) go to dst's columns 0.., columns [split, d) to dst's columns off2.. (row stride ldd).
inline void layer_norm_block(const float* xf, int64_t ldx, int64_t nr, int64_t d, const float* g, const float* b,
                             float eps, uint16_t* dst, int64_t ldd, int64_t split, int64_t off2) {
  constexpr int64_t kRows = 4;  // four rows' statistics in turn: independent dependency chains
  const int64_t nv = (d + 15) / 16;
  const float inv_d = 1.0f / float(d);
  for (int64_t r0 = 0; r0 < nr; r0 += kRows) {
    const int64_t rows = std::min(kRows, nr - r0);
    __m512 s[kRows], q[kRows], mean[kRows], rstd[kRows];
    for (int64_t k = 0; k < kRows; ++k) s[k] = q[k] = _mm512_setzero_ps();
    for (int64_t v = 0; v < nv; ++v) {
      const __mmask16 m = first_lanes(d - v * 16);
      for (int64_t k = 0; k < kRows; ++k) {
        if (k < rows) s[k] = _mm512_add_ps(s[k], _mm512_maskz_loadu_ps(m, xf + (r0 + k) * ldx + v * 16));
      }
    }
    for (int64_t k = 0; k < kRows; ++k) mean[k] = _mm512_set1_ps(_mm512_reduce_add_ps(s[k]) * inv_d);
    for (int64_t v = 0; v < nv; ++v) {
      const __mmask16 m = first_lanes(d - v * 16);
      for (int64_t k = 0; k < kRows; ++k) {
        if (k < rows) {
          const __m512 c = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, xf + (r0 + k) * ldx + v * 16), mean[k]);
          q[k] = _mm512_fmadd_ps(c, c, q[k]);
        }
      }
    }
    for (int64_t k = 0; k < kRows; ++k) {
      rstd[k] = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(q[k]) * inv_d + eps));
    }
    for (int64_t k = 0; k < rows; ++k) {
      const float* xr = xf + (r0 + k) * ldx;
      uint16_t* yr = dst + (r0 + k) * ldd;
      for (int64_t seg = 0; seg < 2; ++seg) {
        const int64_t c0 = seg ? split : 0, len = seg ? d - split : split, o = seg ? off2 : 0;
        for (int64_t v = 0; v * 16 < len; ++v) {
          const __mmask16 m = first_lanes(len - v * 16);
          const int64_t c = c0 + v * 16;
          const __m512 y = _mm512_fmadd_ps(
              _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xr + c), mean[k]), rstd[k]),
              _mm512_maskz_loadu_ps(m, g + c), _mm512_maskz_loadu_ps(m, b + c));
          _mm256_mask_storeu_epi16(yr + o + v * 16, m, f32_to_bf16(y));
        }
      }
    }
  }
}

// The same LayerNorm for rows of at most 256 columns (d = 200: 13 vectors), each row's values
// kept in registers from the load to the normalized result: read straight from bf16 rows
// (attention_input's input) or fp32 ones (x1), no fp32 copy written and read back three times.
inline __m512 load16(const uint16_t* p, __mmask16 m) { return bf16_to_f32(_mm256_maskz_loadu_epi16(m, p)); }
inline __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }

constexpr int64_t kLnMaxVectors = 16;

template <typename T>
inline void layer_norm_rows(const T* x, int64_t ldx, int64_t nr, int64_t d, const float* g, const float* b, float eps,
                            uint16_t* dst, int64_t ldd, int64_t split, int64_t off2) {
  const int64_t nv = (d + 15) / 16;
  const __mmask16 last = first_lanes(d - (nv - 1) * 16);
  const float inv_d = 1.0f / float(d);
  alignas(64) uint16_t row[kLnMaxVectors * 16 + 32];
  for (int64_t r = 0; r < nr; ++r) {
    const T* xr = x + r * ldx;
    __m512 v[kLnMaxVectors];
#pragma GCC unroll 16
    for (int64_t i = 0; i < kLnMaxVectors; ++i) {
      if (i < nv) v[i] = load16(xr + i * 16, i == nv - 1 ? last : __mmask16(0xFFFF));
    }
    // tree sums: short dependency chains
    __m512 s0 = v[0], s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int64_t i = 1; i < kLnMaxVectors; ++i) {
      if (i < nv) {
        if (i % 4 == 0) s0 = _mm512_add_ps(s0, v[i]);
        if (i % 4 == 1) s1 = _mm512_add_ps(s1, v[i]);
        if (i % 4 == 2) s2 = _mm512_add_ps(s2, v[i]);
        if (i % 4 == 3) s3 = _mm512_add_ps(s3, v[i]);
      }
    }
    const __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))) * inv_d);
    __m512 q0 = _mm512_setzero_ps(), q1 = _mm512_setzero_ps(), q2 = _mm512_setzero_ps(), q3 = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int64_t i = 0; i < kLnMaxVectors; ++i) {
      if (i < nv) {
        v[i] = _mm512_maskz_sub_ps(i == nv - 1 ? last : __mmask16(0xFFFF), v[i], mean);
        if (i % 4 == 0) q0 = _mm512_fmadd_ps(v[i], v[i], q0);
        if (i % 4 == 1) q1 = _mm512_fmadd_ps(v[i], v[i], q1);
        if (i % 4 == 2) q2 = _mm512_fmadd_ps(v[i], v[i], q2);
        if (i % 4 == 3) q3 = _mm512_fmadd_ps(v[i], v[i], q3);
      }
    }
    const float var = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(q0, q1), _mm512_add_ps(q2, q3))) * inv_d;
    const __m512 rstd = _mm512_set1_ps(1.0f / std::sqrt(var + eps));
#pragma GCC unroll 16
    for (int64_t i = 0; i < kLnMaxVectors; ++i) {
      if (i < nv) {
        const __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(v[i], rstd), _mm512_load_ps(g + i * 16), _mm512_load_ps(b + i * 16));
        _mm256_store_si256(reinterpret_cast<__m256i*>(row + i * 16), f32_to_bf16(y));
      }
    }
    uint16_t* yr = dst + r * ldd;
    if (split == d) {
      for (int64_t c = 0; c < d; c += 32) {
        const __mmask32 m = d - c >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << (d - c)) - 1);
        _mm512_mask_storeu_epi16(yr + c, m, _mm512_load_si512(row + c));
      }
    } else {
      for (int64_t seg = 0; seg < 2; ++seg) {
        const int64_t c0 = seg ? split : 0, len = seg ? d - split : split, o = seg ? off2 : 0;
        for (int64_t c = 0; c < len; c += 32) {
          const __mmask32 m = len - c >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << (len - c)) - 1);
          _mm512_mask_storeu_epi16(yr + o + c, m, _mm512_maskz_loadu_epi16(m, row + c0 + c));
        }
      }
    }
  }
}

void check_attention_weight(const char* op, const at::Tensor& wp, int64_t n, int64_t k) {
  TORCH_CHECK(wp.scalar_type() == at::kBFloat16 && wp.device().is_cpu() && wp.dim() == 5 && wp.size(0) == 2 &&
                  wp.size(1) == (n + 15) / 16 && wp.size(2) == (k + 31) / 32 && wp.size(3) == 16 && wp.size(4) == 32 &&
                  wp.is_contiguous(),
              op, ": the packed weight must be pack_attention_weight of a block-diagonal (", 2 * n, ", ", 2 * k,
              ") weight");
}

// attention_input's constants: the checks, LN1's γ and β and each half's bias in fp32 (at
// 64-byte-aligned offsets), the packed W_in. Shared with criss_cross_layer.
struct AttentionIn {
  int64_t d = 0, e = 0, n = 0, nt = 0, kt = 0, kp = 0, lda = 0, ldx = 0;
  float eps = 0.0f;
  std::unique_ptr<float[], AlignedFree> g, be, bias_h;
  const uint16_t* w = nullptr;
};

AttentionIn attention_in_setup(const char* op, int64_t d, const at::Tensor& norm_w, const at::Tensor& norm_b,
                               double eps, const at::Tensor& w_in_packed, const at::Tensor& b_in) {
  for (const at::Tensor* t : {&norm_w, &norm_b, &b_in}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), op, ": expects bf16 CPU tensors");
  }
  AttentionIn s;
  s.d = d, s.e = d / 2, s.n = 3 * s.e;
  TORCH_CHECK(norm_w.numel() == d && norm_b.numel() == d, op, ": norm_w and norm_b must be (2E,)");
  TORCH_CHECK(b_in.dim() == 1 && b_in.numel() == 2 * s.n, op, ": b_in must be (6E,)");
  check_attention_weight(op, w_in_packed, s.n, s.e);
  s.nt = (s.n + 15) / 16, s.kt = (s.e + 31) / 32, s.kp = s.kt * 32, s.lda = 2 * s.kp, s.ldx = round_up(d, 16);
  s.eps = float(eps);
  s.g = widen_vector(norm_w, d);
  s.be = widen_vector(norm_b, d);
  const auto bias = widen_vector(b_in, 2 * s.n);
  s.bias_h = aligned_zeros<float>(2 * (s.nt * 16 + 16));
  for (int64_t h = 0; h < 2; ++h) std::memcpy(s.bias_h.get() + h * (s.nt * 16 + 16), bias.get() + h * s.n, size_t(s.n) * 4);
  s.w = reinterpret_cast<const uint16_t*>(w_in_packed.data_ptr<at::BFloat16>());
  return s;
}

// One block of nr <= 32 rows src (row stride d): LN1 into the A scratch a (kBlockRows × lda;
// spatial half at columns 0.., temporal half at kp.., kp = E rounded up to 32, zero between; xf
// an fp32 scratch of kBlockRows × ldx for rows wider than layer_norm_rows takes), each half's
// q/k/v product on AMX with its bias added to the fp32 sums, rounded once into dst (row stride 6E).
inline void attention_in_block(const AttentionIn& s, const uint16_t* src, int64_t nr, uint16_t* a, float* xf,
                               float* cbuf, uint16_t* dst) {
  const int64_t d = s.d, e = s.e, n = s.n, nt = s.nt, kt = s.kt, kp = s.kp, lda = s.lda, ldx = s.ldx;
  const int64_t pairs = (nr + 31) / 32;
  if (d <= kLnMaxVectors * 16) {
    layer_norm_rows(src, d, nr, d, s.g.get(), s.be.get(), s.eps, a, lda, e, kp);
  } else {
    for (int64_t r = 0; r < nr; ++r) {
      const uint16_t* xr = src + r * d;
      for (int64_t c = 0; c < d; c += 16) {
        const __mmask16 m = first_lanes(d - c);
        _mm512_store_ps(xf + r * ldx + c, bf16_to_f32(_mm256_maskz_loadu_epi16(m, xr + c)));
      }
    }
    layer_norm_block(xf, ldx, nr, d, s.g.get(), s.be.get(), s.eps, a, lda, e, kp);
  }
  if (nr < pairs * 32) std::memset(a + nr * lda, 0, size_t((pairs * 32 - nr) * lda) * 2);
  for (int64_t h = 0; h < 2; ++h) {
    const float* bh = s.bias_h.get() + h * (nt * 16 + 16);
    uint16_t* yb = dst + h * n;
    auto epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
      const int64_t c0 = u.n * 16;
      const __mmask16 m0 = first_lanes(n - c0), m1 = u.two ? first_lanes(n - c0 - 16) : __mmask16(0);
      const __m512 bl = _mm512_load_ps(bh + c0), bhi = _mm512_load_ps(bh + c0 + 16);
      hi = std::min(hi, nr - u.rp * 32);
      for (int64_t r = lo; r < hi; ++r) {
        const float* cr = u.c + r * 32;
        uint16_t* yr = yb + (u.rp * 32 + r) * 2 * n + c0;
        const __m512 v0 = _mm512_add_ps(_mm512_load_ps(cr), bl);
        if (m1 == __mmask16(0xFFFF)) {
          const __m512 v1 = _mm512_add_ps(_mm512_load_ps(cr + 16), bhi);
          _mm512_storeu_si512(yr, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
        } else {
          _mm256_mask_storeu_epi16(yr, m0, f32_to_bf16(v0));
          if (m1) _mm256_mask_storeu_epi16(yr + 16, m1, f32_to_bf16(_mm512_add_ps(_mm512_load_ps(cr + 16), bhi)));
        }
      }
    };
    run_product(a + h * kp, lda, s.w + h * nt * kt * kTileElems, nt, kt, pairs, cbuf, epilogue, nr);
  }
}

// qkv (..., 6E) = LN1(x) W_inᵀ + b_in for x (..., 2E), W_in block-diagonal (packed), without
// writing LN1(x): per 32-row block the rows are widened to fp32, normalized into the A scratch
// and each half's product (3E outputs) runs on AMX (attention_in_block).
at::Tensor attention_input(const at::Tensor& x_in, const at::Tensor& norm_w, const at::Tensor& norm_b, double eps,
                           const at::Tensor& w_in_packed, const at::Tensor& b_in) {
  TORCH_CHECK(amx_ok(), "attention_input: this CPU or kernel gives no AMX (check amx_available() first)");
  TORCH_CHECK(x_in.scalar_type() == at::kBFloat16 && x_in.device().is_cpu(), "attention_input: expects bf16 CPU tensors");
  TORCH_CHECK(x_in.dim() >= 1 && x_in.size(-1) > 0 && x_in.size(-1) % 2 == 0,
              "attention_input: x (..., 2E) with E > 0");
  const int64_t d = x_in.size(-1);
  const AttentionIn s = attention_in_setup("attention_input", d, norm_w, norm_b, eps, w_in_packed, b_in);
  const at::Tensor x = x_in.contiguous();
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = 2 * s.n;
  at::Tensor out = at::empty(shape, x.options());
  const int64_t rows = x.numel() / d;
  if (rows == 0) return out;
  const auto* src = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;

  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    auto a = aligned_zeros<uint16_t>(kBlockRows * s.lda);  // LN1 of the block's rows, halves zero-padded to kp
    auto xf = aligned_zeros<float>(kBlockRows * s.ldx);    // the block's rows in fp32
    auto cbuf = aligned_zeros<float>(2 * 32 * 32);
    _tile_loadconfig(&tile_config());
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
      attention_in_block(s, src + r0 * d, nr, a.get(), xf.get(), cbuf.get(), dst + r0 * 2 * s.n);
    }
    _tile_release();
  });
  return out;
}

// Whether x1 = x + att W_outᵀ + b_out is rounded to bf16 before LN2 and the final residual (as
// the unfused path writes it) or kept in fp32 (nearer fp32; the default).
#ifndef PASSPORT_KIT_ROUND_X1
#define PASSPORT_KIT_ROUND_X1 0
#endif

// attention_output_feed_forward's constants (the checks, W_out's per-half biases, LN2, the
// feed-forward block). Shared with criss_cross_layer.
struct AttentionOut {
  int64_t d = 0, e = 0, nt = 0, kt = 0, kp = 0, lda = 0, ldx = 0;
  float eps = 0.0f;
  std::unique_ptr<float[], AlignedFree> g, be, bias_h;
  const uint16_t* w = nullptr;
  Ffn p;
};

AttentionOut attention_out_setup(const char* op, int64_t d, const at::Tensor& w_out_packed, const at::Tensor& b_out,
                                 const at::Tensor& norm_w, const at::Tensor& norm_b, double eps, const at::Tensor& w1p,
                                 const at::Tensor& b1, const at::Tensor& w2p, const at::Tensor& b2) {
  for (const at::Tensor* t : {&b_out, &norm_w, &norm_b}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), op, ": expects bf16 CPU tensors");
  }
  AttentionOut s;
  s.d = d, s.e = d / 2;
  TORCH_CHECK(norm_w.numel() == d && norm_b.numel() == d && b_out.dim() == 1 && b_out.numel() == d, op,
              ": b_out, norm_w and norm_b must be (2E,)");
  check_attention_weight(op, w_out_packed, s.e, s.e);
  s.p = ffn_setup(op, d, w1p, b1, w2p, b2);
  s.nt = (s.e + 15) / 16, s.kt = (s.e + 31) / 32, s.kp = s.kt * 32, s.lda = 2 * s.kp, s.ldx = round_up(d, 16);
  s.eps = float(eps);
  s.g = widen_vector(norm_w, d);
  s.be = widen_vector(norm_b, d);
  s.bias_h = aligned_zeros<float>(2 * (s.nt * 16 + 16));
  const auto bias = widen_vector(b_out, d);
  for (int64_t h = 0; h < 2; ++h) std::memcpy(s.bias_h.get() + h * (s.nt * 16 + 16), bias.get() + h * s.e, size_t(s.e) * 4);
  s.w = reinterpret_cast<const uint16_t*>(w_out_packed.data_ptr<at::BFloat16>());
  return s;
}

// One block of nr <= 32 rows: a holds the block's att rows (row stride lda, spatial half at
// columns 0.., temporal half at kp.., zero between and in the rows nr .. 32·pairs), xb the rows
// of x (row stride d). x1 = x + att W_outᵀ + b_out per half on AMX into x1 (fp32, kBlockRows ×
// ldx, never written out), LN2 of x1 into a2 (kBlockRows × k1p), the feed-forward block with
// x1 as the residual into dst (row stride d). hid: kBlockRows × hp.
inline void attention_out_block(const AttentionOut& s, const uint16_t* a, const uint16_t* xb, int64_t nr, float* x1,
                                uint16_t* a2, uint16_t* hid, float* cbuf, const PhiTable& tab, uint16_t* dst) {
  const int64_t d = s.d, e = s.e, nt = s.nt, kt = s.kt, kp = s.kp, lda = s.lda, ldx = s.ldx, k1p = s.p.k1p;
  const int64_t pairs = (nr + 31) / 32;
  if (nr < pairs * 32) std::memset(a2 + nr * k1p, 0, size_t((pairs * 32 - nr) * k1p) * 2);
  // x1 = x + att W_outᵀ + b_out, per half
  for (int64_t h = 0; h < 2; ++h) {
    const float* bh = s.bias_h.get() + h * (nt * 16 + 16);
    const uint16_t* xh = xb + h * e;
    float* x1b = x1 + h * e;
    auto epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
      const int64_t c0 = u.n * 16;
      const __mmask16 m0 = first_lanes(e - c0), m1 = u.two ? first_lanes(e - c0 - 16) : __mmask16(0);
      const __m512 bl = _mm512_load_ps(bh + c0), bhi = _mm512_load_ps(bh + c0 + 16);
      hi = std::min(hi, nr - u.rp * 32);
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t row = u.rp * 32 + r;
        const float* cr = u.c + r * 32;
        const uint16_t* xr = xh + row * d + c0;
        float* yr = x1b + row * ldx + c0;
        __m512 v0 = _mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr), bl), bf16_to_f32(_mm256_maskz_loadu_epi16(m0, xr)));
        if (PASSPORT_KIT_ROUND_X1) v0 = bf16_to_f32(f32_to_bf16(v0));
        _mm512_mask_storeu_ps(yr, m0, v0);
        if (m1) {
          __m512 v1 = _mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr + 16), bhi),
                                    bf16_to_f32(_mm256_maskz_loadu_epi16(m1, xr + 16)));
          if (PASSPORT_KIT_ROUND_X1) v1 = bf16_to_f32(f32_to_bf16(v1));
          _mm512_mask_storeu_ps(yr + 16, m1, v1);
        }
      }
    };
    run_product(a + h * kp, lda, s.w + h * nt * kt * kTileElems, nt, kt, pairs, cbuf, epilogue, nr);
  }
  if (d <= kLnMaxVectors * 16) {
    layer_norm_rows(x1, ldx, nr, d, s.g.get(), s.be.get(), s.eps, a2, k1p, d, 0);
  } else {
    layer_norm_block(x1, ldx, nr, d, s.g.get(), s.be.get(), s.eps, a2, k1p, d, 0);
  }
  const float* x1c = x1;
  ffn_block(s.p, a2, hid, cbuf, tab, nr, dst, [&](int64_t r, int64_t c0, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, x1c + r * ldx + c0);
  });
}

// Per-thread scratch of attention_out_block.
struct AttentionOutScratch {
  std::unique_ptr<float[], AlignedFree> x1, cbuf;
  std::unique_ptr<uint16_t[], AlignedFree> a2, hid;
  explicit AttentionOutScratch(const AttentionOut& s)
      : x1(aligned_zeros<float>(kBlockRows * s.ldx)), cbuf(aligned_zeros<float>(2 * 32 * 32)),
        a2(aligned_zeros<uint16_t>(kBlockRows * s.p.k1p)), hid(aligned_zeros<uint16_t>(kBlockRows * s.p.hp)) {}
};

// out = x1 + FFN(LN2(x1)), x1 = x + att W_outᵀ + b_out, for att and x (..., 2E), W_out
// block-diagonal (packed): per 32-row block att's halves are copied into the zero-padded A
// scratch (as in attention_input) and attention_out_block runs: the output projection per half
// on AMX, its bias and x added to the fp32 sums into the block's x1 (fp32), LN2 of x1 into the
// feed-forward block's A scratch, and the feed-forward block as feed_forward's with x1 as the residual.
at::Tensor attention_output_feed_forward(const at::Tensor& att_in, const at::Tensor& x_in, const at::Tensor& w_out_packed,
                                         const at::Tensor& b_out, const at::Tensor& norm_w, const at::Tensor& norm_b,
                                         double eps, const at::Tensor& w1p, const at::Tensor& b1, const at::Tensor& w2p,
                                         const at::Tensor& b2) {
  const char* op = "attention_output_feed_forward";
  TORCH_CHECK(amx_ok(), op, ": this CPU or kernel gives no AMX (check amx_available() first)");
  for (const at::Tensor* t : {&att_in, &x_in}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), op, ": expects bf16 CPU tensors");
  }
  TORCH_CHECK(att_in.dim() >= 1 && att_in.sizes() == x_in.sizes(), op, ": att and x must have the same shape");
  TORCH_CHECK(att_in.size(-1) > 0 && att_in.size(-1) % 2 == 0, op, ": att (..., 2E) with E > 0");
  const int64_t d = att_in.size(-1), e = d / 2;
  const AttentionOut s = attention_out_setup(op, d, w_out_packed, b_out, norm_w, norm_b, eps, w1p, b1, w2p, b2);
  const at::Tensor att = att_in.contiguous(), x = x_in.contiguous();
  at::Tensor out = at::empty_like(att);
  const int64_t rows = att.numel() / d;
  if (rows == 0) return out;
  const auto* asrc = reinterpret_cast<const uint16_t*>(att.data_ptr<at::BFloat16>());
  const auto* xsrc = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows, lda = s.lda, kp = s.kp;

  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    auto a = aligned_zeros<uint16_t>(kBlockRows * lda);  // the block's att rows, halves zero-padded to kp
    AttentionOutScratch w(s);
    const PhiTable tab = phi_table();
    _tile_loadconfig(&tile_config());
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
      const int64_t pairs = (nr + 31) / 32;
      for (int64_t r = 0; r < nr; ++r) {
        std::memcpy(a.get() + r * lda, asrc + (r0 + r) * d, size_t(e) * 2);
        std::memcpy(a.get() + r * lda + kp, asrc + (r0 + r) * d + e, size_t(e) * 2);
      }
      if (nr < pairs * 32) std::memset(a.get() + nr * lda, 0, size_t((pairs * 32 - nr) * lda) * 2);
      attention_out_block(s, a.get(), xsrc + r0 * d, nr, w.x1.get(), w.a2.get(), w.hid.get(), w.cbuf.get(), tab,
                          dst + r0 * d);
    }
    _tile_release();
  });
  return out;
}

}  // namespace

// lowp.h's AMX check for kernels.cpp: its attention takes AMX tiles where this says so (with the
// tile configuration above: criss_cross_layer has it loaded when it calls sample_attention_run).
namespace passport_kit_lowp {
bool amx_usable() { return amx_ok(); }
void load_tile_config() { _tile_loadconfig(&tile_config()); }
}  // namespace passport_kit_lowp

namespace {

// criss_cross_layer's per-thread scratch, kept between calls (thread_local: the same pool threads
// run every layer) while the shapes stay: a fresh 0.6 MB each call cost page faults (about 4 % of
// a one-sample layer). The attention output's padding columns and rows are zeroed once and never written.
struct LayerScratch {
  int64_t key[6] = {-1, -1, -1, -1, -1, -1};
  std::unique_ptr<uint16_t[], AlignedFree> qkv, att, a;
  std::unique_ptr<float[], AlignedFree> xf;
  std::unique_ptr<AttentionOutScratch> out;
  std::unique_ptr<passport_kit_lowp::SampleAttention, void (*)(passport_kit_lowp::SampleAttention*)> attention{
      nullptr, &passport_kit_lowp::sample_attention_free};
};

LayerScratch& layer_scratch(int64_t c, int64_t p, int64_t d, int64_t f, int64_t heads_s, int64_t heads_t,
                            const AttentionIn& si, const AttentionOut& so) {
  thread_local LayerScratch ws;
  const int64_t key[6] = {c, p, d, f, heads_s, heads_t};
  if (!std::equal(key, key + 6, ws.key)) {
    const int64_t rows = c * p, blocks = (rows + kBlockRows - 1) / kBlockRows;
    ws.qkv = aligned_zeros<uint16_t>(rows * 2 * si.n);            // the sample's q/k/v rows
    ws.att = aligned_zeros<uint16_t>(blocks * kBlockRows * so.lda);  // its attention output, A layout
    ws.a = aligned_zeros<uint16_t>(kBlockRows * si.lda);
    ws.xf = aligned_zeros<float>(kBlockRows * si.ldx);
    ws.out = std::make_unique<AttentionOutScratch>(so);
    ws.attention.reset(passport_kit_lowp::sample_attention_new(c, p, d / 2, heads_s, heads_t));
    std::copy(key, key + 6, ws.key);
  }
  return ws;
}

// A whole criss-cross layer at inference, sample by sample: for x (B, C, P, 2E) the same result
// as attention_input, criss_cross_attention and attention_output_feed_forward in turn (the same
// block routines and attend, so the same bits), but each thread takes whole samples (one
// sample's C·P rows: every attention sequence lies inside it) and keeps the sample's q/k/v
// (C·P × 6E bf16) and attention output (C·P × 2E, already in the output projection's zero-padded
// A layout, so no copy) in its own scratch, in the L2 cache: neither is written to memory. Per
// sample: LN1 and the q/k/v products per 32-row block, both halves' attention, then the output
// projection, residual, LN2 and feed-forward block per 32-row block (a sample's last block may
// be partial: C·P = 360 is 11 blocks and 8 rows). Parallel over samples only: with fewer
// samples than threads the three ops are faster (layer.py decides).
at::Tensor criss_cross_layer(const at::Tensor& x_in, const at::Tensor& norm1_w, const at::Tensor& norm1_b,
                             double eps1, const at::Tensor& w_in_packed, const at::Tensor& b_in, int64_t heads_s,
                             int64_t heads_t, const at::Tensor& w_out_packed, const at::Tensor& b_out,
                             const at::Tensor& norm2_w, const at::Tensor& norm2_b, double eps2, const at::Tensor& w1p,
                             const at::Tensor& b1, const at::Tensor& w2p, const at::Tensor& b2) {
  const char* op = "criss_cross_layer";
  TORCH_CHECK(amx_ok(), op, ": this CPU or kernel gives no AMX (check amx_available() first)");
  TORCH_CHECK(x_in.scalar_type() == at::kBFloat16 && x_in.device().is_cpu() && x_in.dim() == 4, op,
              ": expects a bf16 CPU tensor x (B, C, P, 2E)");
  TORCH_CHECK(x_in.size(3) > 0 && x_in.size(3) % 2 == 0, op, ": x (B, C, P, 2E) with E > 0");
  const int64_t b = x_in.size(0), c = x_in.size(1), p = x_in.size(2), d = x_in.size(3), e = d / 2;
  TORCH_CHECK(heads_s > 0 && heads_t > 0 && e % heads_s == 0 && e % heads_t == 0, op,
              ": E must split into whole heads");
  const AttentionIn si = attention_in_setup(op, d, norm1_w, norm1_b, eps1, w_in_packed, b_in);
  const AttentionOut so = attention_out_setup(op, d, w_out_packed, b_out, norm2_w, norm2_b, eps2, w1p, b1, w2p, b2);
  const at::Tensor x = x_in.contiguous();
  at::Tensor out = at::empty_like(x);
  const int64_t rows = c * p;  // per sample
  if (out.numel() == 0) return out;
  const auto* src = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows, ldq = 2 * si.n, lda = so.lda;

  at::parallel_for(0, b, 1, [&](int64_t begin, int64_t end) {
    LayerScratch& ws = layer_scratch(c, p, d, so.p.f, heads_s, heads_t, si, so);
    uint16_t* const qkv = ws.qkv.get();
    uint16_t* const att = ws.att.get();
    AttentionOutScratch& w = *ws.out;
    const PhiTable tab = phi_table();
    _tile_loadconfig(&tile_config());
    for (int64_t smp = begin; smp < end; ++smp) {
      const uint16_t* xs = src + smp * rows * d;
      uint16_t* ys = dst + smp * rows * d;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
        attention_in_block(si, xs + r0 * d, nr, ws.a.get(), ws.xf.get(), w.cbuf.get(), qkv + r0 * ldq);
      }
      passport_kit_lowp::sample_attention_run(ws.attention.get(), qkv, ldq, att, lda, so.kp);
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
        attention_out_block(so, att + r0 * lda, xs + r0 * d, nr, w.x1.get(), w.a2.get(), w.hid.get(),
                            w.cbuf.get(), tab, ys + r0 * d);
      }
    }
    _tile_release();
  });
  return out;
}

// GELU in place over a contiguous bf16 (32 values at a time) or fp32 tensor (the fp32 form
// shows the approximation itself, unrounded: the tests measure it).
at::Tensor& gelu_(at::Tensor& x) {
  TORCH_CHECK((x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kFloat) && x.device().is_cpu() &&
                  x.is_contiguous(),
              "gelu_: expects a contiguous bf16 or fp32 CPU tensor");
  const int64_t n = x.numel();
  constexpr int64_t kChunk = 32;
  if (x.scalar_type() == at::kFloat) {
    float* p = x.data_ptr<float>();
    at::parallel_for(0, (n + kChunk - 1) / kChunk, 2048, [&](int64_t begin, int64_t end) {
      const PhiTable tab = phi_table();
      for (int64_t i = begin * kChunk, stop = std::min(end * kChunk, n); i < stop; i += 16) {
        const __mmask16 m = first_lanes(stop - i);
        _mm512_mask_storeu_ps(p + i, m, gelu16(_mm512_maskz_loadu_ps(m, p + i), tab));
      }
    });
    return x;
  }
  auto* p = reinterpret_cast<uint16_t*>(x.data_ptr<at::BFloat16>());
  at::parallel_for(0, (n + kChunk - 1) / kChunk, 2048, [&](int64_t begin, int64_t end) {
    const PhiTable tab = phi_table();
    for (int64_t i = begin * kChunk, stop = std::min(end * kChunk, n); i < stop; i += kChunk) {
      const int64_t left = stop - i;
      if (left >= kChunk) {
        const __m512i v = _mm512_loadu_si512(p + i);
        const __m512 lo = gelu16(bf16_to_f32(_mm512_castsi512_si256(v)), tab);
        const __m512 hi = gelu16(bf16_to_f32(_mm512_extracti64x4_epi64(v, 1)), tab);
        _mm512_storeu_si512(p + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      } else {
        for (int64_t j = 0; j < left; j += 16) {
          const __mmask16 m = first_lanes(left - j);
          const __m512 v = gelu16(bf16_to_f32(_mm256_maskz_loadu_epi16(m, p + i + j)), tab);
          _mm256_mask_storeu_epi16(p + i + j, m, f32_to_bf16(v));
        }
      }
    }
  });
  return x;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(passport_kit, m) {
  m.def("amx_available() -> bool");
  m.def("pack_feed_forward_weight(Tensor w) -> Tensor");
  m.def("feed_forward(Tensor h2, Tensor x1, Tensor w1p, Tensor b1, Tensor w2p, Tensor b2) -> Tensor");
  m.def("gelu_(Tensor(a!) x) -> Tensor(a!)");
  m.def("pack_attention_weight(Tensor w) -> Tensor");
  m.def("attention_input(Tensor x, Tensor norm_w, Tensor norm_b, float eps, Tensor w_in_packed, Tensor b_in) -> Tensor");
  m.def(
      "attention_output_feed_forward(Tensor att, Tensor x, Tensor w_out_packed, Tensor b_out, Tensor norm_w, "
      "Tensor norm_b, float eps, Tensor w1p, Tensor b1, Tensor w2p, Tensor b2) -> Tensor");
  m.def(
      "criss_cross_layer(Tensor x, Tensor norm1_w, Tensor norm1_b, float eps1, Tensor w_in_packed, Tensor b_in, "
      "int heads_s, int heads_t, Tensor w_out_packed, Tensor b_out, Tensor norm2_w, Tensor norm2_b, float eps2, "
      "Tensor w1p, Tensor b1, Tensor w2p, Tensor b2) -> Tensor");
}

TORCH_LIBRARY_IMPL(passport_kit, CPU, m) {
  m.impl("pack_feed_forward_weight", &pack_feed_forward_weight);
  m.impl("feed_forward", &feed_forward);
  m.impl("gelu_", &gelu_);
  m.impl("pack_attention_weight", &pack_attention_weight);
  m.impl("attention_input", &attention_input);
  m.impl("attention_output_feed_forward", &attention_output_feed_forward);
  m.impl("criss_cross_layer", &criss_cross_layer);
}

TORCH_LIBRARY_IMPL(passport_kit, CompositeExplicitAutograd, m) { m.impl("amx_available", &amx_available); }
