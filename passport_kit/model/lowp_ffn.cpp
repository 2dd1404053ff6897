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
//
// GELU: GELU(x) = x·Φ(x) with Φ the standard normal CDF. The result is rounded to bf16 (relative
// step 2^-8), so Φ needs ~1e-5 absolute accuracy, not erf's full fp32 accuracy: Φ is a cubic
// polynomial on each of 32 intervals of [-5.5, 5.5) (coefficients looked up by vpermt2ps),
// 0 below -5.5 and the last cubic (≈ 1 - 2e-8) above. |Φ error| < 3e-6 (tests/model/test_lowp_ffn.py).
// gelu_ is the same GELU as a separate in-place pass over a bf16 (or fp32) tensor (AVX-512F only, no AMX).
// The bf16 rounding (vcvtne2ps2bf16) is to nearest even and flushes subnormal results to 0.
//
// AMX: palette 1, all eight tiles 16 rows × 64 bytes: tmm0-3 four 16×16 fp32 accumulators
// (2 row tiles × 2 column tiles), tmm4-5 two A tiles (16 rows × 32 bf16), tmm6-7 two B tiles in
// VNNI layout (16 k-pairs × 16 columns × 2 bf16). The process asks the kernel for the tile data
// state once (arch_prctl ARCH_REQ_XCOMP_PERM); feed_forward refuses to run where the CPU lacks
// AMX-TILE/AMX-BF16 or the kernel refuses (amx_available() says which the Python side may call).
// Built with -mamx-tile -mamx-bf16 (lowp_kernels_build.py): GCC emits AMX only for the
// intrinsics here. Inference only: no autograd formula is registered.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

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
// left as they were. between(k) runs after the k-th step's tile products are issued: the
// previous unit's vector epilogue, in slices, so that it runs while the tile unit computes.

template <bool two, typename Between>
inline void tile_unit(const uint16_t* a, int64_t lda, const uint16_t* b0, const uint16_t* b1, int64_t kt, float* c,
                      Between&& between) {
  _tile_zero(0);
  _tile_zero(2);
  if (two) {
    _tile_zero(1);
    _tile_zero(3);
  }
  const int64_t stride = lda * 2;
  for (int64_t k = 0; k < kt; ++k) {
    _tile_loadd(4, a + k * 32, stride);
    _tile_loadd(6, b0 + k * kTileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(5, a + 16 * lda + k * 32, stride);
    _tile_dpbf16ps(2, 5, 6);
    if (two) {
      _tile_loadd(7, b1 + k * kTileElems, 64);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
    between(k);
  }
  _tile_stored(0, c, 128);
  _tile_stored(2, c + 16 * 32, 128);
  if (two) {
    _tile_stored(1, c + 16, 128);
    _tile_stored(3, c + 16 * 32 + 16, 128);
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
template <typename Epilogue>
inline void run_product(const uint16_t* a, int64_t lda, const uint16_t* w, int64_t nt, int64_t kt, int64_t pairs,
                        float* cbuf, Epilogue&& epilogue) {
  Unit prev;
  int slot = 0;
  const int64_t step = (32 + kt - 1) / kt;  // epilogue rows per k step
  for (int64_t n = 0; n < nt; n += 2) {
    const uint16_t* b0 = w + n * kt * kTileElems;
    for (int64_t rp = 0; rp < pairs; ++rp) {
      Unit cur{n, rp, n + 1 < nt, cbuf + slot * 32 * 32};
      auto between = [&](int64_t k) {
        if (prev.n >= 0) epilogue(prev, std::min<int64_t>(32, k * step), std::min<int64_t>(32, (k + 1) * step));
      };
      const uint16_t* ar = a + rp * 32 * lda;
      if (cur.two) {
        tile_unit<true>(ar, lda, b0, b0 + kt * kTileElems, kt, cur.c, between);
      } else {
        tile_unit<false>(ar, lda, b0, b0, kt, cur.c, between);
      }
      prev = cur;
      slot ^= 1;
    }
  }
  epilogue(prev, 0, 32);
}

// out = x1 + GELU(h2 W1ᵀ + b1) W2ᵀ + b2 over rows of d columns (bf16, row-major, contiguous).
at::Tensor feed_forward(const at::Tensor& h2_in, const at::Tensor& x1_in, const at::Tensor& w1p, const at::Tensor& b1,
                        const at::Tensor& w2p, const at::Tensor& b2) {
  TORCH_CHECK(amx_ok(), "feed_forward: this CPU or kernel gives no AMX (check amx_available() first)");
  for (const at::Tensor* t : {&h2_in, &x1_in, &w1p, &b1, &w2p, &b2}) {
    TORCH_CHECK(t->scalar_type() == at::kBFloat16 && t->device().is_cpu(), "feed_forward: expects bf16 CPU tensors");
  }
  TORCH_CHECK(h2_in.dim() >= 1 && h2_in.sizes() == x1_in.sizes(), "feed_forward: h2 and x1 must have the same shape");
  const int64_t d = h2_in.size(-1), f = b1.numel();
  TORCH_CHECK(d > 0 && f > 0 && b2.numel() == d && b1.dim() == 1 && b2.dim() == 1, "feed_forward: b1 (F,), b2 (D,)");
  const int64_t k1t = (d + 31) / 32, n1t = (f + 15) / 16, k2t = (f + 31) / 32, n2t = (d + 15) / 16;
  TORCH_CHECK(w1p.dim() == 4 && w1p.size(0) == n1t && w1p.size(1) == k1t && w1p.size(2) == 16 && w1p.size(3) == 32 &&
                  w1p.is_contiguous(),
              "feed_forward: w1p must be pack_feed_forward_weight of linear1's (F, D) weight");
  TORCH_CHECK(w2p.dim() == 4 && w2p.size(0) == n2t && w2p.size(1) == k2t && w2p.size(2) == 16 && w2p.size(3) == 32 &&
                  w2p.is_contiguous(),
              "feed_forward: w2p must be pack_feed_forward_weight of linear2's (D, F) weight");
  const at::Tensor h2 = h2_in.contiguous(), x1 = x1_in.contiguous();
  at::Tensor out = at::empty_like(h2);
  const int64_t rows = h2.numel() / d;
  if (rows == 0) return out;
  const int64_t k1p = k1t * 32, hp = k2t * 32;  // padded widths of the A block and of the hidden block
  // Biases in fp32, zero past F (the hidden's padded columns are GELU(0) = 0) and past D.
  auto bias1 = aligned_zeros<float>(n1t * 16 + 16), bias2 = aligned_zeros<float>(n2t * 16 + 16);
  {
    const at::Tensor b1c = b1.contiguous(), b2c = b2.contiguous();
    const auto* p1 = reinterpret_cast<const uint16_t*>(b1c.data_ptr<at::BFloat16>());
    const auto* p2 = reinterpret_cast<const uint16_t*>(b2c.data_ptr<at::BFloat16>());
    for (int64_t i = 0; i < f; ++i) bias1[i] = c10::detail::f32_from_bits(p1[i]);
    for (int64_t i = 0; i < d; ++i) bias2[i] = c10::detail::f32_from_bits(p2[i]);
  }
  const auto* src = reinterpret_cast<const uint16_t*>(h2.data_ptr<at::BFloat16>());
  const auto* res = reinterpret_cast<const uint16_t*>(x1.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const auto* w1 = reinterpret_cast<const uint16_t*>(w1p.data_ptr<at::BFloat16>());
  const auto* w2 = reinterpret_cast<const uint16_t*>(w2p.data_ptr<at::BFloat16>());
  const float* bb1 = bias1.get();
  const float* bb2 = bias2.get();
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;

  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    auto a = aligned_zeros<uint16_t>(kBlockRows * k1p);   // the block's h2 rows, zero-padded to k1p columns
    auto hid = aligned_zeros<uint16_t>(kBlockRows * hp);  // the block's hidden rows (bf16), never written out
    auto cbuf = aligned_zeros<float>(2 * 32 * 32);        // two 32×32 fp32 accumulator units
    const PhiTable tab = phi_table();
    _tile_loadconfig(&tile_config());
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t r0 = blk * kBlockRows, nr = std::min(kBlockRows, rows - r0);
      const int64_t pairs = (nr + 31) / 32;
      for (int64_t r = 0; r < nr; ++r) std::memcpy(a.get() + r * k1p, src + (r0 + r) * d, size_t(d) * 2);
      if (nr < pairs * 32) std::memset(a.get() + nr * k1p, 0, size_t((pairs * 32 - nr) * k1p) * 2);
      // Product 1, bias and GELU into the block's hidden rows.
      auto gelu_epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
        const __m512 bl = _mm512_load_ps(bb1 + u.n * 16), bh = _mm512_load_ps(bb1 + u.n * 16 + 16);
        for (int64_t r = lo; r < hi; ++r) {
          const float* cr = u.c + r * 32;
          const __m512 g0 = gelu16(_mm512_add_ps(_mm512_load_ps(cr), bl), tab);
          uint16_t* hr = hid.get() + (u.rp * 32 + r) * hp + u.n * 16;
          if (u.two) {
            const __m512 g1 = gelu16(_mm512_add_ps(_mm512_load_ps(cr + 16), bh), tab);
            _mm512_store_si512(hr, (__m512i)_mm512_cvtne2ps_pbh(g1, g0));
          } else {
            _mm256_store_si256(reinterpret_cast<__m256i*>(hr), f32_to_bf16(g0));
          }
        }
      };
      run_product(a.get(), k1p, w1, n1t, k1t, pairs, cbuf.get(), gelu_epilogue);
      // Product 2, bias and residual into the output rows.
      auto residual_epilogue = [&](const Unit& u, int64_t lo, int64_t hi) {
        const int64_t c0 = u.n * 16;
        const __mmask16 m0 = first_lanes(d - c0), m1 = u.two ? first_lanes(d - c0 - 16) : __mmask16(0);
        const __m512 bl = _mm512_load_ps(bb2 + c0), bh = _mm512_load_ps(bb2 + c0 + 16);
        hi = std::min(hi, nr - u.rp * 32);
        for (int64_t r = lo; r < hi; ++r) {
          const float* cr = u.c + r * 32;
          const int64_t row = r0 + u.rp * 32 + r;
          const uint16_t* xr = res + row * d + c0;
          uint16_t* yr = dst + row * d + c0;
          const __m512 v0 = bf16_to_f32(_mm256_maskz_loadu_epi16(m0, xr));
          _mm256_mask_storeu_epi16(yr, m0, f32_to_bf16(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr), bl), v0)));
          if (m1) {
            const __m512 v1 = bf16_to_f32(_mm256_maskz_loadu_epi16(m1, xr + 16));
            _mm256_mask_storeu_epi16(yr + 16, m1,
                                     f32_to_bf16(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(cr + 16), bh), v1)));
          }
        }
      };
      run_product(hid.get(), hp, w2, n2t, k2t, pairs, cbuf.get(), residual_epilogue);
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
}

TORCH_LIBRARY_IMPL(passport_kit, CPU, m) {
  m.impl("pack_feed_forward_weight", &pack_feed_forward_weight);
  m.impl("feed_forward", &feed_forward);
  m.impl("gelu_", &gelu_);
}

TORCH_LIBRARY_IMPL(passport_kit, CompositeExplicitAutograd, m) { m.impl("amx_available", &amx_available); }
