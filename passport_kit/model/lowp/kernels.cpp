// Fused bf16 kernels for the criss-cross encoder's inference on CPUs with AVX-512 (issue 36).
//
// Why: in the eager bf16 path (layer.py) the attention over 12- and 30-token sequences of
// head size 25 cost more than its products are worth: a copy regrouping q/k/v by heads, two
// batched products, a written-out softmax with fp32 round trips, and a copy back (about a third
// of a batch's time on the AMX Xeon). Here each sequence is read straight from the packed q/k/v
// product, computed in the L1 cache (bf16 products summed in fp32, the softmax in fp32), and
// written into the columns the output projection reads. LayerNorm (bf16 rows in and out, fp32 statistics) is one pass per row.
//
// Vectors are GCC vector extensions of 16 floats (one AVX-512 register); the attention's two
// products use AMX tiles where amx.cpp's amx_available() says so (attend_amx), and AVX-512
// BF16's pairwise dot product elsewhere (attend; criss_cross_attention's amx=False takes it too). The build script compiles with
// -march=x86-64-v4 -mavx512bf16, and the Python side loads the library only where the CPU has
// AVX-512 BF16 and torch itself runs AVX-512 kernels. Inference only: no autograd formula is
// registered.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <optional>
#include <vector>

#include "lowp.h"  // amx_usable, load_tile_config (amx.cpp); SampleAttention (defined below)

namespace {

constexpr int64_t kLanes = 16;  // floats per vector
constexpr int kRows = 6;        // rows per micro-kernel block: 12 and 30 tokens are multiples

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

inline vf splat(float x) { return vf{} + x; }

inline float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, as c10::BFloat16 does; NaN stays NaN. Branch-free, so loops of it vectorise.
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return uint16_t(f != f ? 0x7FC0u : rounded);
}

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// exp for x <= 0 (scores less their query's maximum): 2^n · e^r with |r| <= ln2/2 and e^r by its
// Taylor polynomial to r^6 (relative error ~1e-7); lanes below -87 (and -inf) give 0.
inline vf exp_nonpositive(vf x) {
  const vf lo = splat(-87.0f);
  vi dead = x < lo;
  x = dead ? lo : x;
  const vf magic = splat(12582912.0f);  // 1.5·2^23: adding it rounds to an integer
  vf n = (x * splat(1.44269504f) + magic) - magic;
  vf r = x - n * splat(0.693359375f) - n * splat(-2.12194440e-4f);  // ln2 in two parts
  vf p = splat(1.0f / 720);
  p = p * r + splat(1.0f / 120);
  p = p * r + splat(1.0f / 24);
  p = p * r + splat(1.0f / 6);
  p = p * r + splat(0.5f);
  p = p * r + splat(1.0f);
  p = p * r + splat(1.0f);
  vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
  vf scale;
  std::memcpy(&scale, &bits, sizeof scale);
  vf out = p * scale;
  return dead ? splat(0.0f) : out;
}

// Horizontal sum in four shuffle steps (a lane-by-lane loop is a 16-long dependency chain).
const vi kSwap8 = {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7};
const vi kSwap4 = {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11};
const vi kSwap2 = {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13};
const vi kSwap1 = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};

inline vf vmax(vf a, vf b) { return a > b ? a : b; }

inline float lane_sum(vf v) {
  v += __builtin_shuffle(v, kSwap8);
  v += __builtin_shuffle(v, kSwap4);
  v += __builtin_shuffle(v, kSwap2);
  v += __builtin_shuffle(v, kSwap1);
  return v[0];
}

// Sum of nvec vectors at x, in four chains (one would be latency-bound).
inline float sum_vectors(const float* x, int64_t nvec) {
  vf s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t j = 0;
  for (; j + 4 <= nvec; j += 4) {
    s0 += load(x + j * kLanes);
    s1 += load(x + (j + 1) * kLanes);
    s2 += load(x + (j + 2) * kLanes);
    s3 += load(x + (j + 3) * kLanes);
  }
  for (; j < nvec; ++j) s0 += load(x + j * kLanes);
  return lane_sum((s0 + s1) + (s2 + s3));
}

// All lanes below n set (n in 1..16).
inline vi first_lanes(int64_t n) {
  vi mask;
  for (int i = 0; i < kLanes; ++i) mask[i] = i < n ? -1 : 0;
  return mask;
}

// n bf16 values from src to dst, 16 at a time, the last few by a masked load and store (a libc
// memcpy of a row's 200 bytes per token was a tenth of the attention's time).
inline void copy_bf16(uint16_t* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(dst + i, m, _mm256_maskz_loadu_epi16(m, src + i));
  }
}

// Lane c of the two shuffles that swap the off-diagonal s×s blocks of rows r and r + s:
// from row r: c & s ? (r + s)[c - s] : r[c]; from row r + s: c & s ? (r + s)[c] : r[c + s].
inline vi swap_low(int s) {
  vi mask;
  for (int c = 0; c < kLanes; ++c) mask[c] = (c & s) ? kLanes + c - s : c;
  return mask;
}

inline vi swap_high(int s) {
  vi mask;
  for (int c = 0; c < kLanes; ++c) mask[c] = (c & s) ? kLanes + c : c + s;
  return mask;
}

// Transpose the 16×16 block m[0..15] in registers: swapping the off-diagonal blocks of 8, 4, 2
// and 1 swaps every bit of the row and column indices (64 two-register shuffles, against 256
// scalar loads and stores).
inline void transpose16(vf* m) {
  static const vi low[4] = {swap_low(8), swap_low(4), swap_low(2), swap_low(1)};
  static const vi high[4] = {swap_high(8), swap_high(4), swap_high(2), swap_high(1)};
  for (int stage = 0; stage < 4; ++stage) {
    const int s = 8 >> stage;
    for (int r = 0; r < kLanes; ++r) {
      if (r & s) continue;
      const vf a = m[r], b = m[r + s];
      m[r] = __builtin_shuffle(a, b, low[stage]);
      m[r + s] = __builtin_shuffle(a, b, high[stage]);
    }
  }
}

// The two small products use AVX-512 BF16's pairwise dot product (vdpbf16ps): each 32-bit lane
// holds two bf16 values, adjacent along the contraction, and the fp32 accumulator gains
// a0·b0 + a1·b1, both products exact. Half the instructions of fp32 FMAs on the same data;
// the inputs are bf16 already (q, k, v) or rounded to it once (the softmax weights, as the
// eager form does).

typedef uint32_t vu __attribute__((vector_size(64)));

inline uint32_t load_word(const uint16_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

inline vu load_words(const uint32_t* p) {
  vu v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_words(uint32_t* p, vu v) { std::memcpy(p, &v, sizeof v); }

inline vu bits(vf x) {
  vu u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Lanes of lo and hi rounded to bf16 (nearest even) and paired: lo in the low half of each word.
inline vu pack_bf16(vf lo, vf hi) {
  vu a = bits(lo), b = bits(hi);
  a = (a + 0x7FFFu + ((a >> 16) & 1u)) >> 16;
  b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  return a | b;
}

inline vf dot_pairs(vf acc, uint32_t a, vu b) {
  return (vf)_mm512_dpbf16_ps((__m512)acc, (__m512bh)(vu{} + a), (__m512bh)b);
}

// c[kRows × NV·16] = a · b, contracting over k pairs: a's pair (r, t) is the 32-bit word at
// a + r·ra + t·ta (in bf16 units, any alignment), b's row of pairs t is b + t·ldb (words).
// The accumulators stay in registers; each b vector is loaded once per t and each a word broadcast.
template <int NV>
inline void block_product(const uint16_t* a, int64_t ra, int64_t ta, const uint32_t* b, int64_t ldb,
                          int64_t k, float* c, int64_t ldc) {
  vf acc[kRows][NV] = {};
  for (int64_t t = 0; t < k; ++t) {
    vu bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load_words(b + t * ldb + v * kLanes);
    for (int r = 0; r < kRows; ++r) {
      const uint32_t ar = load_word(a + r * ra + t * ta);
      for (int v = 0; v < NV; ++v) acc[r][v] = dot_pairs(acc[r][v], ar, bv[v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < NV; ++v) store(c + r * ldc + v * kLanes, acc[r][v]);
}

// c[rows × width] = a · b as above, rows a multiple of kRows, width of 16.
void product(const uint16_t* a, int64_t ra, int64_t ta, const uint32_t* b, int64_t ldb, int64_t k, float* c,
             int64_t ldc, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; r += kRows) {
    for (int64_t col = 0; col < width;) {
      const int64_t left = (width - col) / kLanes;
      const uint16_t* ar = a + r * ra;
      float* cr = c + r * ldc + col;
      if (left >= 4) {
        block_product<4>(ar, ra, ta, b + col, ldb, k, cr, ldc);
        col += 4 * kLanes;
      } else if (left == 3) {
        block_product<3>(ar, ra, ta, b + col, ldb, k, cr, ldc);
        col += 3 * kLanes;
      } else if (left == 2) {
        block_product<2>(ar, ra, ta, b + col, ldb, k, cr, ldc);
        col += 2 * kLanes;
      } else {
        block_product<1>(ar, ra, ta, b + col, ldb, k, cr, ldc);
        col += kLanes;
      }
    }
  }
}

// The largest of len rows (ld floats apart) of the 16 columns at s, lane by lane: each query's
// largest score, down the columns of the transposed scores. Two chains (the maximum is latency-bound).
inline vf column_max(const float* s, int64_t len, int64_t ld) {
  vf m0 = load(s), m1 = m0;
  int64_t j = 1;
  for (; j + 1 < len; j += 2) {
    m0 = vmax(m0, load(s + j * ld));
    m1 = vmax(m1, load(s + (j + 1) * ld));
  }
  if (j < len) m0 = vmax(m0, load(s + j * ld));
  return vmax(m0, m1);
}

// Working copies of one sequence (all heads), reused across one thread's sequences.
// The scores are held transposed, keys down and queries across (sᵀ = k qᵀ), so the softmax over
// a query's keys runs down the rows, a vector of 16 queries at a time, with no reduction across
// lanes. k stays bf16 (rows of E + 2, zero rows past the sequence), its pairs read in place; q too
// (rows of E + 32, zero rows up to a whole vector of queries), and each head's column pairs are
// transposed as 32-bit words (qp: a head's pairs down, queries across, a head's odd last column
// paired with 0); v is paired by rows (vp: row pairs down, E + 16 columns
// across). The weights are rounded to bf16 and paired by keys (wp: key pairs down, queries
// across). A head's 16-wide column blocks of the output may run past its hd columns: reading the
// next head's columns of vp (or its zeros) into lanes that are never written out, and writing into
// the next head's output columns before that head is computed.
struct Scratch {
  int64_t len, e, hd, heads, len_r, len_c, hd_p, width, pairs, kw, qw;
  std::vector<float> s, o;
  std::vector<uint16_t> q, k;
  std::vector<uint32_t> qp, vp, wp;
  Scratch(int64_t len_, int64_t e_, int64_t heads_)
      : len(len_), e(e_), hd(e_ / heads_), heads(heads_), len_r(round_up(len_, kRows)),
        len_c(round_up(round_up(len_, kRows), kLanes)), hd_p(round_up(e_ / heads_, kLanes)),
        width(e_ + kLanes), pairs((len_ + 1) / 2), kw(e_ + 2), qw(e_ + 2 * kLanes),
        s(len_r * len_c, 0.0f), o(len_r * width, 0.0f), q(len_c * qw, 0), k(len_r * kw, 0),
        qp(round_up((e_ / heads_ + 1) / 2, kLanes) * len_c, 0), vp((len_ + 1) / 2 * (e_ + kLanes), 0),
        wp((len_ + 1) / 2 * len_c, 0) {}
};

// softmax(q kᵀ) v of one sequence, every head. Token t's q, k, v (E bf16 each, heads side by side)
// start at src + t·stride, + E, + 2E; its output (E bf16) goes to out + t·out_stride. The softmax
// scale is folded into q.
void attend(const uint16_t* src, int64_t stride, uint16_t* out, int64_t out_stride, Scratch& w) {
  const int64_t len = w.len, e = w.e, hd = w.hd, len_c = w.len_c, width = w.width, kw = w.kw, qw = w.qw;
  for (int64_t t = 0; t < len; ++t) {
    const uint16_t* row = src + t * stride;
    copy_bf16(w.q.data() + t * qw, row, e);
    copy_bf16(w.k.data() + t * kw, row + e, e);
  }
  for (int64_t t = 0; t < len; t += 2) {
    const uint16_t* v0 = src + t * stride + 2 * e;
    uint32_t* vrow = w.vp.data() + t / 2 * width;
    if (t + 1 < len) {
      const uint16_t* v1 = v0 + stride;
      for (int64_t d = 0; d < e; ++d) vrow[d] = uint32_t(v0[d]) | uint32_t(v1[d]) << 16;
    } else {
      for (int64_t d = 0; d < e; ++d) vrow[d] = v0[d];
    }
  }
  const int64_t head_pairs = (hd + 1) / 2;
  float* s = w.s.data();
  uint32_t* qp = w.qp.data();
  uint32_t* wp = w.wp.data();
  for (int64_t h = 0; h < w.heads; ++h) {  // in order: head h's output blocks overrun into h + 1's columns
    // q's column pairs of head h transposed as words, 16 pairs × 16 queries a block (exact: they
    // are bf16 values); an odd last column paired with 0, so k's word there (its next column)
    // adds nothing
    for (int64_t i0 = 0; i0 < head_pairs; i0 += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, head_pairs - i0);
      for (int64_t t0 = 0; t0 < len_c; t0 += kLanes) {
        vf m[kLanes];
        for (int i = 0; i < kLanes; ++i) std::memcpy(&m[i], w.q.data() + (t0 + i) * qw + h * hd + 2 * i0, sizeof m[i]);
        transpose16(m);
        if (hd % 2 && i0 + n == head_pairs) m[n - 1] = (vf)(bits(m[n - 1]) & 0xFFFFu);
        for (int64_t i = 0; i < n; ++i) store(reinterpret_cast<float*>(qp + (i0 + i) * len_c + t0), m[i]);
      }
    }
    // sᵀ (keys × queries); rows past len come from k's zero rows and are never read
    product(w.k.data() + h * hd, kw, 2, qp, len_c, head_pairs, s, len_c, w.len_r, len_c);
    for (int64_t col = 0; col < len_c; col += kLanes) {
      const vf shift = column_max(s + col, len, len_c);
      int64_t j;
      vf t0 = {}, t1 = {};
      for (j = 0; j + 1 < len; j += 2) {
        vf x0 = exp_nonpositive(load(s + j * len_c + col) - shift);
        vf x1 = exp_nonpositive(load(s + (j + 1) * len_c + col) - shift);
        store(s + j * len_c + col, x0);
        store(s + (j + 1) * len_c + col, x1);
        t0 += x0;
        t1 += x1;
      }
      if (j < len) {
        vf x0 = exp_nonpositive(load(s + j * len_c + col) - shift);
        store(s + j * len_c + col, x0);
        t0 += x0;
      }
      // the weights normalised, rounded to bf16 and paired by keys (an odd last key with 0)
      const vf inv = splat(1.0f) / (t0 + t1);
      for (j = 0; j + 1 < len; j += 2)
        store_words(wp + j / 2 * len_c + col,
                    pack_bf16(load(s + j * len_c + col) * inv, load(s + (j + 1) * len_c + col) * inv));
      if (j < len) store_words(wp + j / 2 * len_c + col, pack_bf16(load(s + j * len_c + col) * inv, vf{}));
    }
    // output = weights · v: a query's key pairs are words down wp's columns
    product(reinterpret_cast<const uint16_t*>(wp), 2, 2 * len_c, w.vp.data() + h * hd, width, w.pairs,
            w.o.data() + h * hd, width, w.len_r, w.hd_p);
  }
  for (int64_t t = 0; t < len; ++t) {
    const float* orow = w.o.data() + t * width;
    uint16_t* dst = out + t * out_stride;
    for (int64_t d = 0; d < e; ++d) dst[d] = to_bf16(orow[d]);
  }
}

// ---------------------------------------------------------------------------------------------
// The same attention on AMX tiles (where amx_usable(): amx.cpp's amx_available), both small
// products as 16×16 fp32 tile products (_tile_dpbf16ps), everything else in AVX-512.
//
// Tiles: all eight 16 rows × 64 bytes, the configuration amx.cpp's ops load (tile_config
// there; criss_cross_layer has it loaded when it calls sample_attention_run, and
// criss_cross_attention loads the same per thread). Per (sequence, head):
//   sᵀ = k qᵀ: A = k's rows (16 keys × 32 columns from the head's first; rows past the sequence
//     zero), B = q's column pairs transposed as words (qa: a head's pairs down, queries across,
//     built straight from the input by transpose16; the odd last column paired with 0, pairs past
//     the head zero), so the next head's columns that A reads add nothing; 32 columns per step.
//   the softmax down sᵀ's columns as in attend (max-shifted, fp32 sum, normalised by one
//     reciprocal, each weight rounded to bf16 once), the exp by exp2_poly4 (below); the weights of
//     16 key pairs × 16 queries are transposed in registers into wa (queries down, key pairs
//     across: A of the second product, 16 pairs = 32 keys per step, pairs past the sequence zero).
//   o = w v: B = v paired by rows (va: key pairs down, columns across, pairs past the sequence
//     zero), 16 columns per tile: a head's last tile runs into the next head's columns, which are
//     written before that head is computed (heads in order), or into va's zero columns past E.

// e^x for x <= 0 as 2^t, t = x·log2(e) = n + f (n = round(t), |f| <= 1/2): 2^f by a degree-4
// polynomial (fitted for relative error on [-1/2, 1/2]: at most 8.5e-6, with fp32 arithmetic
// about 1e-5; the weights are rounded to bf16 afterwards, a relative step of 2^-8) scaled by 2^n
// with vscalefps, which underflows to 0 (x below -104 clamped there: 2^-150 is 0). NaN stays NaN.
inline vf exp2_poly4(vf x) {
  __m512 v = _mm512_max_ps(_mm512_set1_ps(-104.0f), (__m512)x);  // a NaN x is returned (second operand)
  const __m512 t = _mm512_mul_ps(v, _mm512_set1_ps(1.44269504f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(9.254960343e-03f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.585603043e-02f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.403125167e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931306124e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999977946e-01f));
  return (vf)_mm512_scalef_ps(p, n);
}

// One 16×16 fp32 tile product c = Σ_steps a_i b_i of bf16 tiles (a: 16 rows × 32 bf16 at a + i·a_step
// bytes, rows lda bytes apart; b: 16 rows of pairs at b + i·b_step, ldb apart), and its store.
struct TileJob {
  const char* a;
  const char* b;
  char* c;
};

struct TileShape {
  int64_t lda, ldb, ldc, a_step, b_step, steps;
};

// (A macro: GCC's tile intrinsics paste their tile numbers into the instruction's text.)
#define PASSPORT_TILE_JOB(C, A, B, j, f)                 \
  do {                                                   \
    _tile_zero(C);                                       \
    for (int64_t i_ = 0; i_ < (f).steps; ++i_) {         \
      _tile_loadd(A, (j).a + i_ * (f).a_step, (f).lda);  \
      _tile_loadd(B, (j).b + i_ * (f).b_step, (f).ldb);  \
      _tile_dpbf16ps(C, A, B);                           \
    }                                                    \
  } while (0)

// The jobs in groups of four: four accumulator tiles (0-3) and two pairs of source tiles (4-5,
// 6-7) in turn, so that a job's products need not wait for the previous job's store (one
// accumulator for all: each job waited out the whole latency of its product and store). The
// stores keep the jobs' order.
void run_tile_jobs(const TileJob* jobs, int64_t n, const TileShape& f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    PASSPORT_TILE_JOB(0, 4, 5, jobs[i], f);
    PASSPORT_TILE_JOB(1, 6, 7, jobs[i + 1], f);
    PASSPORT_TILE_JOB(2, 4, 5, jobs[i + 2], f);
    PASSPORT_TILE_JOB(3, 6, 7, jobs[i + 3], f);
    _tile_stored(0, jobs[i].c, f.ldc);
    _tile_stored(1, jobs[i + 1].c, f.ldc);
    _tile_stored(2, jobs[i + 2].c, f.ldc);
    _tile_stored(3, jobs[i + 3].c, f.ldc);
  }
  const int64_t left = n - i;
  if (left > 0) PASSPORT_TILE_JOB(0, 4, 5, jobs[i], f);
  if (left > 1) PASSPORT_TILE_JOB(1, 6, 7, jobs[i + 1], f);
  if (left > 2) PASSPORT_TILE_JOB(2, 4, 5, jobs[i + 2], f);
  if (left > 0) _tile_stored(0, jobs[i].c, f.ldc);
  if (left > 1) _tile_stored(1, jobs[i + 1].c, f.ldc);
  if (left > 2) _tile_stored(2, jobs[i + 2].c, f.ldc);
}
#undef PASSPORT_TILE_JOB

// Vectors of 64-byte aligned storage: each tile row and each vector of attend_amx's working copies
// then lies in one cache line (split rows made every tile load and store two accesses a row).
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const Aligned64<U>&) const { return true; }
};
template <class T>
using avec = std::vector<T, Aligned64<T>>;

// Working copies of one sequence for attend_amx (all heads), reused across one thread's sequences.
// Each head's k, v pairs and output apart, in rows of whole cache lines (a head's columns padded
// with zeros to kc bf16 for k, vc words for v and floats for the output).
struct AmxScratch {
  int64_t len, e, hd, heads, len_c, hd_pairs, pairs_c, kpairs_c, kc, vc;
  avec<uint16_t> k;       // heads × len_c × kc: k's rows, zero past hd and past len
  avec<uint32_t> qa;      // heads × pairs_c × len_c: each head's q pairs transposed
  avec<float> s;          // heads × len_c × len_c: sᵀ, keys down
  avec<uint32_t> wa, va;  // heads × len_c × kpairs_c (weights), heads × kpairs_c × vc (v pairs)
  avec<float> o;          // heads × len_c × vc
  std::vector<TileJob> jobs;  // one stage's tile products
  AmxScratch(int64_t len_, int64_t e_, int64_t heads_)
      : len(len_), e(e_), hd(e_ / heads_), heads(heads_), len_c(round_up(len_, kLanes)),
        hd_pairs((e_ / heads_ + 1) / 2), pairs_c(round_up((e_ / heads_ + 1) / 2, kLanes)),
        kpairs_c(round_up((len_ + 1) / 2, kLanes)), kc(2 * round_up((e_ / heads_ + 1) / 2, kLanes)),
        vc(round_up(e_ / heads_, 2 * kLanes)), k(heads_ * len_c * kc, 0), qa(heads_ * pairs_c * len_c, 0),
        s(heads_ * len_c * len_c, 0.0f), wa(heads_ * len_c * kpairs_c, 0), va(heads_ * kpairs_c * vc, 0),
        o(heads_ * len_c * vc, 0.0f), jobs(heads_ * len_c / kLanes * std::max(len_c, vc) / kLanes) {}
};

inline __mmask32 first_halves(int64_t n) {  // the first n (clamped to 0..32) of 32 bf16 lanes
  return n >= 32 ? ~__mmask32(0) : n <= 0 ? __mmask32(0) : __mmask32((1u << n) - 1);
}

// attend's computation (same arguments) on AMX; the tile configuration must be loaded. In stages
// over all heads (the copies, the q pairs, the scores, the softmax, the second product).
void attend_amx(const uint16_t* src, int64_t stride, uint16_t* out, int64_t out_stride, AmxScratch& w) {
  const int64_t len = w.len, e = w.e, hd = w.hd, len_c = w.len_c, heads = w.heads, kc = w.kc, vc = w.vc;
  const int64_t hd_pairs = w.hd_pairs, pairs_c = w.pairs_c, kpairs_c = w.kpairs_c;
  // each head's k rows, zero-padded to kc
  for (int64_t t = 0; t < len; ++t) {
    const uint16_t* krow = src + t * stride + e;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c0 = 0; c0 < kc; c0 += 32)
        _mm512_store_si512(w.k.data() + (h * len_c + t) * kc + c0,
                           _mm512_maskz_loadu_epi16(first_halves(hd - c0), krow + h * hd + c0));
  }
  // each head's v rows paired: word d of pair row j is (v[2j][d], v[2j + 1][d]), zero past hd
  {
    static const __m512i lo_idx = [] {
      __m512i r;
      uint16_t* x = reinterpret_cast<uint16_t*>(&r);
      for (int i = 0; i < 16; ++i) x[2 * i] = uint16_t(i), x[2 * i + 1] = uint16_t(32 + i);
      return r;
    }();
    const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
    for (int64_t t = 0; t < len; t += 2) {
      const uint16_t* v0 = src + t * stride + 2 * e;
      for (int64_t h = 0; h < heads; ++h) {
        uint32_t* vrow = w.va.data() + (h * kpairs_c + t / 2) * vc;
        for (int64_t c0 = 0; c0 < vc; c0 += 32) {
          const __mmask32 m = first_halves(hd - c0);
          const __m512i a = _mm512_maskz_loadu_epi16(m, v0 + h * hd + c0);
          const __m512i b = t + 1 < len ? _mm512_maskz_loadu_epi16(m, v0 + stride + h * hd + c0) : _mm512_setzero_si512();
          _mm512_store_si512(vrow + c0, _mm512_permutex2var_epi16(a, lo_idx, b));
          _mm512_store_si512(vrow + c0 + 16, _mm512_permutex2var_epi16(a, hi_idx, b));
        }
      }
    }
  }
  // q's column pairs of each head as words, transposed (16 pairs × 16 queries a block)
  for (int64_t h = 0; h < heads; ++h) {
    uint32_t* const qa = w.qa.data() + h * pairs_c * len_c;
    for (int64_t i0 = 0; i0 < hd_pairs; i0 += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, hd_pairs - i0);
      const __mmask16 m = __mmask16((1u << n) - 1);
      for (int64_t t0 = 0; t0 < len_c; t0 += kLanes) {
        vf r[kLanes];
        for (int i = 0; i < kLanes; ++i)
          r[i] = t0 + i < len ? (vf)_mm512_maskz_loadu_epi32(m, src + (t0 + i) * stride + h * hd + 2 * i0) : vf{};
        transpose16(r);
        if (hd % 2 && i0 + n == hd_pairs) r[n - 1] = (vf)(bits(r[n - 1]) & 0xFFFFu);
        for (int64_t i = 0; i < n; ++i) store(reinterpret_cast<float*>(qa + (i0 + i) * len_c + t0), r[i]);
      }
    }
  }
  // sᵀ of each head, 16 keys × 16 queries a tile
  const int64_t sb = len_c * int64_t(sizeof(float));
  {
    TileJob* job = w.jobs.data();
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t kb = 0; kb < len_c; kb += kLanes)
        for (int64_t qb = 0; qb < len_c; qb += kLanes)
          *job++ = {reinterpret_cast<const char*>(w.k.data() + (h * len_c + kb) * kc),
                    reinterpret_cast<const char*>(w.qa.data() + h * pairs_c * len_c + qb),
                    reinterpret_cast<char*>(w.s.data() + h * len_c * len_c + kb * len_c + qb)};
    run_tile_jobs(w.jobs.data(), job - w.jobs.data(),
                  {kc * int64_t(sizeof(uint16_t)), sb, sb, 64, kLanes * sb, pairs_c / kLanes});
  }
  // each head's softmax, a column of 16 queries at a time; the weights to wa
  for (int64_t h = 0; h < heads; ++h) {
    float* const s = w.s.data() + h * len_c * len_c;
    uint32_t* const wa = w.wa.data() + h * len_c * kpairs_c;
    for (int64_t col = 0; col < len_c; col += kLanes) {
      const vf shift = column_max(s + col, len, len_c);
      int64_t j;
      vf t0 = {}, t1 = {};
      for (j = 0; j + 1 < len; j += 2) {
        const vf x0 = exp2_poly4(load(s + j * len_c + col) - shift);
        const vf x1 = exp2_poly4(load(s + (j + 1) * len_c + col) - shift);
        store(s + j * len_c + col, x0);
        store(s + (j + 1) * len_c + col, x1);
        t0 += x0;
        t1 += x1;
      }
      if (j < len) {
        const vf x0 = exp2_poly4(load(s + j * len_c + col) - shift);
        store(s + j * len_c + col, x0);
        t0 += x0;
      }
      const vf inv = splat(1.0f) / (t0 + t1);
      for (int64_t j0 = 0; j0 < kpairs_c; j0 += kLanes) {  // 16 key pairs × 16 queries, transposed
        vf r[kLanes];
        for (int i = 0; i < kLanes; ++i) {
          const int64_t a = 2 * (j0 + i);
          if (a + 1 < len)
            r[i] = (vf)pack_bf16(load(s + a * len_c + col) * inv, load(s + (a + 1) * len_c + col) * inv);
          else if (a < len)
            r[i] = (vf)pack_bf16(load(s + a * len_c + col) * inv, vf{});
          else
            r[i] = vf{};
        }
        transpose16(r);
        for (int i = 0; i < kLanes; ++i) store(reinterpret_cast<float*>(wa + (col + i) * kpairs_c + j0), r[i]);
      }
    }
  }
  // o = w v of each head, 16 queries × 16 columns a tile
  {
    TileJob* job = w.jobs.data();
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t qb = 0; qb < len_c; qb += kLanes)
        for (int64_t cb = 0; cb < hd; cb += kLanes)
          *job++ = {reinterpret_cast<const char*>(w.wa.data() + (h * len_c + qb) * kpairs_c),
                    reinterpret_cast<const char*>(w.va.data() + h * kpairs_c * vc + cb),
                    reinterpret_cast<char*>(w.o.data() + (h * len_c + qb) * vc + cb)};
    const int64_t ldv = vc * int64_t(sizeof(uint32_t));
    run_tile_jobs(w.jobs.data(), job - w.jobs.data(),
                  {kpairs_c * int64_t(sizeof(uint32_t)), ldv, vc * int64_t(sizeof(float)), 64, kLanes * ldv,
                   kpairs_c / kLanes});
  }
  // the output rows, each head's columns rounded to bf16 (nearest even) 32 at a time
  for (int64_t t = 0; t < len; ++t) {
    uint16_t* dst = out + t * out_stride;
    for (int64_t h = 0; h < heads; ++h) {
      const float* orow = w.o.data() + (h * len_c + t) * vc;
      for (int64_t c0 = 0; c0 < hd; c0 += 32) {
        const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_load_ps(orow + c0 + 16), _mm512_load_ps(orow + c0));
        _mm512_mask_storeu_epi16(dst + h * hd + c0, first_halves(hd - c0), (__m512i)b);
      }
    }
  }
}

// Sequences per parallel chunk: tens of microseconds of work or more, so the two threads' chunks
// stay even while the per-chunk scratch set-up is negligible.
constexpr int64_t kGrain = 8;

// qkv (B, C, P, 6E) bf16, columns [q_s k_s v_s | q_t k_t v_t] (each E wide, heads of E/H side by
// side); returns (B, C, P, 2E): the spatial heads' outputs in :E, the temporal ones' in E:.
// amx: None takes AMX tiles where amx_available() (attend_amx), False the AVX-512 BF16 form
// (attend), True AMX or an error. The two agree within a bf16 step of each weight.
at::Tensor criss_cross_attention(const at::Tensor& qkv_in, int64_t heads_s, int64_t heads_t,
                                 std::optional<bool> amx) {
  TORCH_CHECK(qkv_in.scalar_type() == at::kBFloat16 && qkv_in.dim() == 4 && qkv_in.device().is_cpu(),
              "criss_cross_attention: expects a bf16 CPU tensor (B, C, P, 6E)");
  TORCH_CHECK(qkv_in.size(3) % 6 == 0, "criss_cross_attention: the last dimension must be 6E");
  const at::Tensor qkv = qkv_in.contiguous();
  const int64_t b = qkv.size(0), c = qkv.size(1), p = qkv.size(2), e = qkv.size(3) / 6;
  TORCH_CHECK(heads_s > 0 && heads_t > 0 && e % heads_s == 0 && e % heads_t == 0,
              "criss_cross_attention: E must split into whole heads");
  const bool use_amx = amx.value_or(passport_kit_lowp::amx_usable());
  TORCH_CHECK(!use_amx || passport_kit_lowp::amx_usable(),
              "criss_cross_attention: amx=True, but this CPU or kernel gives no AMX (check amx_available() first)");
  at::Tensor out = at::empty({b, c, p, 2 * e}, qkv.options());
  if (out.numel() == 0) return out;
  const auto* src = reinterpret_cast<const uint16_t*>(qkv.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t row = 6 * e, out_row = 2 * e;
  // spatial: the sequence of patch (b, p) over the C channels
  at::parallel_for(0, b * p, kGrain, [&](int64_t begin, int64_t end) {
    if (use_amx) {
      AmxScratch w(c, e, heads_s);
      passport_kit_lowp::load_tile_config();
      for (int64_t n = begin; n < end; ++n) {
        const int64_t first = (n / p) * c * p + n % p;  // token (b, 0, p)
        attend_amx(src + first * row, p * row, dst + first * out_row, p * out_row, w);
      }
      _tile_release();
      return;
    }
    Scratch w(c, e, heads_s);
    for (int64_t n = begin; n < end; ++n) {
      const int64_t first = (n / p) * c * p + n % p;  // token (b, 0, p)
      attend(src + first * row, p * row, dst + first * out_row, p * out_row, w);
    }
  });
  // temporal: the sequence of channel (b, c) over the P patches
  at::parallel_for(0, b * c, kGrain, [&](int64_t begin, int64_t end) {
    if (use_amx) {
      AmxScratch w(p, e, heads_t);
      passport_kit_lowp::load_tile_config();
      for (int64_t n = begin; n < end; ++n) {
        const int64_t first = n * p;  // token (b, c, 0)
        attend_amx(src + first * row + 3 * e, row, dst + first * out_row + e, out_row, w);
      }
      _tile_release();
      return;
    }
    Scratch w(p, e, heads_t);
    for (int64_t n = begin; n < end; ++n) {
      const int64_t first = n * p;  // token (b, c, 0)
      attend(src + first * row + 3 * e, row, dst + first * out_row + e, out_row, w);
    }
  });
  return out;
}

// 16 bf16 values widened to fp32, and 16 fp32 values rounded to bf16 (nearest even; NaN stays NaN).
typedef uint16_t vh __attribute__((vector_size(32)));

inline vf widen(const uint16_t* p) {
  vh h;
  std::memcpy(&h, p, sizeof h);
  const vu u = __builtin_convertvector(h, vu) << 16;
  vf f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline vh round_bf16(vf f) {
  vu a = bits(f);
  a = (a + 0x7FFFu + ((a >> 16) & 1u)) >> 16;
  return __builtin_convertvector((f != f) ? vu{} + 0x7FC0u : a, vh);
}

inline void narrow(uint16_t* p, vf f) {
  const vh h = round_bf16(f);
  std::memcpy(p, &h, sizeof h);
}

// The first n (0..16) values only, by masked loads and stores (a memcpy through a stack buffer
// stalls on store forwarding, once per row).
inline vf widen_first(const uint16_t* p, int64_t n) {
  const __m256i h = _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), p);
  const vu u = __builtin_convertvector((vh)h, vu) << 16;
  vf f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline void narrow_first(uint16_t* p, vf f, int64_t n) {
  _mm256_mask_storeu_epi16(p, __mmask16((1u << n) - 1), (__m256i)round_bf16(f));
}

// LayerNorm over the last dimension of bf16 x with bf16 weight and bias; statistics in fp32.
at::Tensor layer_norm(const at::Tensor& x_in, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  TORCH_CHECK(x_in.scalar_type() == at::kBFloat16 && x_in.device().is_cpu() && x_in.dim() >= 1,
              "layer_norm: expects a bf16 CPU tensor");
  const int64_t d = x_in.size(-1);
  TORCH_CHECK(d > 0 && weight.scalar_type() == at::kBFloat16 && bias.scalar_type() == at::kBFloat16 &&
                  weight.numel() == d && bias.numel() == d,
              "layer_norm: weight and bias must be bf16 of the last dimension's size");
  const at::Tensor x = x_in.contiguous();
  at::Tensor out = at::empty_like(x);
  const int64_t rows = x.numel() / d, d_p = round_up(d, kLanes), nvec = d_p / kLanes;
  const auto* src = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  std::vector<float> gamma(d_p, 0.0f), beta(d_p, 0.0f);  // padded to whole vectors
  const at::Tensor wc = weight.contiguous(), bc = bias.contiguous();
  const auto* wp = reinterpret_cast<const uint16_t*>(wc.data_ptr<at::BFloat16>());
  const auto* bp = reinterpret_cast<const uint16_t*>(bc.data_ptr<at::BFloat16>());
  for (int64_t i = 0; i < d; ++i) {
    gamma[i] = from_bf16(wp[i]);
    beta[i] = from_bf16(bp[i]);
  }
  const int64_t full = d / kLanes, rest = d - full * kLanes;
  const vi tail = first_lanes(rest ? rest : kLanes);
  const float epsf = float(eps), inv_d = 1.0f / float(d);
  // Rows in groups of kLnRows, each step of the statistics done for all of them in turn: a row's
  // statistics are a chain of dependent reductions (sum, lane sum, squares, lane sum, sqrt), so
  // one row at a time leaves the core waiting on latency.
  constexpr int64_t kLnRows = 4;
  at::parallel_for(0, rows, 64, [&, src, dst, full, rest](int64_t begin, int64_t end) {
    std::vector<float> buf(kLnRows * d_p, 0.0f);
    const float* const g = gamma.data();
    const float* const be = beta.data();
    for (int64_t r0 = begin; r0 < end; r0 += kLnRows) {
      const int64_t nr = std::min(kLnRows, end - r0);
      float mean[kLnRows] = {}, rstd[kLnRows] = {};
      for (int64_t k = 0; k < nr; ++k) {
        const uint16_t* xr = src + (r0 + k) * d;
        float* xf = buf.data() + k * d_p;
        vf s0 = {}, s1 = {};
        int64_t v = 0;
        for (; v + 2 <= full; v += 2) {
          const vf a = widen(xr + v * kLanes), b2 = widen(xr + (v + 1) * kLanes);
          store(xf + v * kLanes, a);
          store(xf + (v + 1) * kLanes, b2);
          s0 += a;
          s1 += b2;
        }
        for (; v < full; ++v) {
          const vf a = widen(xr + v * kLanes);
          store(xf + v * kLanes, a);
          s0 += a;
        }
        if (rest) {
          const vf a = widen_first(xr + full * kLanes, rest);
          store(xf + full * kLanes, a);
          s1 += a;
        }
        mean[k] = lane_sum(s0 + s1) * inv_d;
      }
      for (int64_t k = 0; k < nr; ++k) {
        const float* xf = buf.data() + k * d_p;
        const vf mv = splat(mean[k]);
        vf q0 = {}, q1 = {};
        int64_t v = 0;
        for (; v + 2 <= full; v += 2) {
          const vf c0 = load(xf + v * kLanes) - mv, c1 = load(xf + (v + 1) * kLanes) - mv;
          q0 += c0 * c0;
          q1 += c1 * c1;
        }
        for (; v < full; ++v) {
          const vf c0 = load(xf + v * kLanes) - mv;
          q0 += c0 * c0;
        }
        if (rest) {
          vf c0 = load(xf + full * kLanes) - mv;
          c0 = tail ? c0 : splat(0.0f);
          q1 += c0 * c0;
        }
        rstd[k] = lane_sum(q0 + q1) * inv_d;
      }
      for (int64_t k = 0; k < nr; ++k) rstd[k] = 1.0f / std::sqrt(rstd[k] + epsf);
      for (int64_t k = 0; k < nr; ++k) {
        const float* xf = buf.data() + k * d_p;
        uint16_t* yr = dst + (r0 + k) * d;
        const vf mv = splat(mean[k]), rs = splat(rstd[k]);
        for (int64_t v = 0; v < full; ++v)
          narrow(yr + v * kLanes, (load(xf + v * kLanes) - mv) * rs * load(g + v * kLanes) + load(be + v * kLanes));
        if (rest)
          narrow_first(yr + full * kLanes,
                       (load(xf + full * kLanes) - mv) * rs * load(g + full * kLanes) + load(be + full * kLanes), rest);
      }
    }
  });
  return out;
}


// GELU, erf form: gelu(x) = x/2 + |x|·E(|x|) with E(u) = erf(u/√2)/2 (erf is odd, so the sign
// needs no handling). E is piecewise: on 32 intervals of u centred at i·0.175 (i = 0..31) a cubic
// in the distance from the centre (least squares at Chebyshev nodes); from 31.5·0.175 = 5.5125
// on, E is 1/2 (erf's distance from 1 there is below fp32's step). Evaluated in fp32 the result
// is within 2.4e-7·max(1, |x|) of the exact GELU, far below bf16's step. Each lane's
// coefficients come from two registers per power by one two-table permute (vpermt2ps): no
// gather, no division (a rational erf's division made the pass twice as slow as this one).
alignas(64) const float kGelu[4][32] = {
    {-2.65769873e-09f, 0.0694601089f, 0.136830509f, 0.200208217f, 0.258036137f, 0.309212863f, 0.353140771f, 0.389712274f, 0.419243246f, 0.442371726f, 0.459940851f, 0.47288534f, 0.482135624f, 0.488547087f, 0.492857248f, 0.495667607f, 0.497444898f, 0.498535097f, 0.499183655f, 0.499557912f, 0.499767393f, 0.499881089f, 0.499940932f, 0.499971509f, 0.499986649f, 0.49999392f, 0.499997318f, 0.499998838f, 0.499999523f, 0.499999821f, 0.499999911f, 0.49999997f},
    {0.398942798f, 0.392879814f, 0.375240207f, 0.347583175f, 0.312253922f, 0.27205506f, 0.229882255f, 0.188388228f, 0.149727598f, 0.115411662f, 0.0862774104f, 0.0625524446f, 0.0439836346f, 0.0299942233f, 0.0198373422f, 0.0127241611f, 0.00791542791f, 0.00477550365f, 0.00279423874f, 0.00158564863f, 0.000872670265f, 0.000465792866f, 0.000241120899f, 0.000121053068f, 5.89409174e-05f, 2.78327661e-05f, 1.27466474e-05f, 5.66152949e-06f, 2.43876912e-06f, 1.01884405e-06f, 4.12802848e-07f, 1.62210029e-07f},
    {-2.1035692e-05f, -0.0343066491f, -0.0655368268f, -0.0910692662f, -0.109099776f, -0.118840709f, -0.120530203f, -0.115268372f, -0.104733996f, -0.0908539519f, -0.0754958242f, -0.0602358952f, -0.0462276414f, -0.0341695808f, -0.0243510678f, -0.0167453084f, -0.0111186421f, -0.00713228388f, -0.00442199362f, -0.00265083578f, -0.00153695478f, -0.000862125016f, -0.000467962935f, -0.000245850999f, -0.000125034378f, -6.15671961e-05f, -2.93557168e-05f, -1.35553282e-05f, -6.06246249e-06f, -2.62635035e-06f, -1.10218969e-06f, -4.48121853e-07f},
    {-0.066236265f, -0.0633792952f, -0.054805167f, -0.0419208221f, -0.0265334826f, -0.01065074f, 0.00387964095f, 0.0156577397f, 0.0238929316f, 0.0284231901f, 0.0296132211f, 0.0281775221f, 0.0249821059f, 0.0208707955f, 0.0165445283f, 0.0125022382f, 0.00903549884f, 0.00626009982f, 0.00416539749f, 0.00266553159f, 0.00164227129f, 0.000975052768f, 0.000558280561f, 0.000308448856f, 0.000164529818f, 8.47667325e-05f, 4.21978584e-05f, 2.03038799e-05f, 9.44528983e-06f, 4.24920927e-06f, 1.84906003e-06f, 7.78449873e-07f},
};
constexpr float kGeluStep = 0.175f;

inline vf gelu_erf(vf x) {
  vi bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0x7FFFFFFF;
  vf u;  // |x|
  std::memcpy(&u, &bits, sizeof u);
  // adding 1.5·2^23 rounds u/step to an integer i, held in the sum's low mantissa bits; the
  // permutes read the index's low 5 bits, so the float's bits serve as the index directly
  const vf magic = splat(12582912.0f);
  const vf r = u * splat(1.0f / kGeluStep) + magic;
  vi idx;
  std::memcpy(&idx, &r, sizeof idx);
  const vf t = u - (r - magic) * splat(kGeluStep);
  const auto coef = [&](int power) {
    return __builtin_shuffle(load(kGelu[power]), load(kGelu[power] + kLanes), idx);
  };
  vf p = coef(3);
  p = p * t + coef(2);
  p = p * t + coef(1);
  p = p * t + coef(0);
  p = u >= splat(31.5f * kGeluStep) ? splat(0.5f) : p;  // also ±inf; NaN stays NaN through t
  return u * p + splat(0.5f) * x;
}

// The patch embedding's time branch (three conv blocks, each conv → GroupNorm → GELU) runs its
// convolutions as dense products over a patch's 200 values (patch_embedding.py); between them this
// does GroupNorm and GELU in one call per sample. x is (B, R, D) bf16: R rows (a sample's C·P
// patches), D columns of which group g is [g·D/G, (g+1)·D/G). Statistics per (sample, group) over
// R rows × D/G columns in fp32, two passes (mean, then centred squares) over the sample held in
// fp32 scratch (rows padded to whole vectors with zeros); then (x − mean)·rstd·weight + bias and
// GELU, rounded to bf16 (the next product's input). With `add` (B, R, D) bf16, the sum in fp32 is
// rounded instead.
at::Tensor group_norm_gelu(const at::Tensor& x_in, int64_t groups, const at::Tensor& weight, const at::Tensor& bias,
                           double eps, const c10::optional<at::Tensor>& add_in) {
  TORCH_CHECK(x_in.scalar_type() == at::kBFloat16 && x_in.dim() == 3 && x_in.device().is_cpu(),
              "group_norm_gelu: expects a bf16 CPU tensor (B, R, D)");
  const int64_t b = x_in.size(0), r = x_in.size(1), d = x_in.size(2);
  TORCH_CHECK(groups > 0 && d % groups == 0, "group_norm_gelu: D must split into whole groups");
  TORCH_CHECK(weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat && weight.numel() == d &&
                  bias.numel() == d,
              "group_norm_gelu: weight and bias must be fp32 of D elements (one per column)");
  const bool has_add = add_in.has_value();
  at::Tensor add;
  if (has_add) {
    add = add_in->contiguous();
    TORCH_CHECK(add.scalar_type() == at::kBFloat16 && add.sizes() == x_in.sizes(),
                "group_norm_gelu: add must be bf16 of x's shape");
  }
  const at::Tensor x = x_in.contiguous();
  at::Tensor out = at::empty_like(x);
  if (x.numel() == 0) return out;
  const at::Tensor wc = weight.contiguous(), bc = bias.contiguous();
  const float* gamma = wc.data_ptr<float>();
  const float* beta = bc.data_ptr<float>();
  const auto* src = reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>());
  const auto* addp = has_add ? reinterpret_cast<const uint16_t*>(add.data_ptr<at::BFloat16>()) : nullptr;
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  const int64_t full = d / kLanes, rest = d - full * kLanes, nvec = full + (rest > 0), d_p = nvec * kLanes;
  const int64_t width = d / groups;
  const float epsf = float(eps), inv_n = 1.0f / float(r * width);
  at::parallel_for(0, b, 1, [&, src, addp, dst, gamma, beta](int64_t begin, int64_t end) {
    std::vector<float> buf(r * d_p, 0.0f), col(d_p), sq(d_p), scale(d_p, 0.0f), shift(d_p, 0.0f), mean(groups);
    float* const xf = buf.data();
    float* const cs = col.data();
    float* const qs = sq.data();
    float* const sc = scale.data();
    float* const sh = shift.data();
    for (int64_t s = begin; s < end; ++s) {
      const uint16_t* xs = src + s * r * d;
      // pass 1: widen to fp32 (rows padded with zeros to whole vectors), column sums
      std::fill(col.begin(), col.end(), 0.0f);
      for (int64_t i = 0; i < r; ++i) {
        float* row = xf + i * d_p;
        const uint16_t* xr = xs + i * d;
        for (int64_t v = 0; v < full; ++v) {
          const vf a = widen(xr + v * kLanes);
          store(row + v * kLanes, a);
          store(cs + v * kLanes, load(cs + v * kLanes) + a);
        }
        if (rest) {
          const vf a = widen_first(xr + full * kLanes, rest);
          store(row + full * kLanes, a);
          store(cs + full * kLanes, load(cs + full * kLanes) + a);
        }
      }
      for (int64_t g = 0; g < groups; ++g) {
        double acc = 0.0;
        for (int64_t j = g * width; j < (g + 1) * width; ++j) acc += cs[j];
        mean[g] = float(acc) * inv_n;
        for (int64_t j = g * width; j < (g + 1) * width; ++j) sh[j] = mean[g];
      }
      // pass 2: centred squares per column (padding lanes: 0 − 0)
      std::fill(sq.begin(), sq.end(), 0.0f);
      for (int64_t i = 0; i < r; ++i) {
        const float* row = xf + i * d_p;
        for (int64_t v = 0; v < nvec; ++v) {
          const vf c = load(row + v * kLanes) - load(sh + v * kLanes);
          store(qs + v * kLanes, load(qs + v * kLanes) + c * c);
        }
      }
      for (int64_t g = 0; g < groups; ++g) {
        double acc = 0.0;
        for (int64_t j = g * width; j < (g + 1) * width; ++j) acc += qs[j];
        const float rstd = 1.0f / std::sqrt(float(acc) * inv_n + epsf);
        for (int64_t j = g * width; j < (g + 1) * width; ++j) {
          sc[j] = rstd * gamma[j];
          sh[j] = beta[j] - mean[g] * sc[j];  // y = x·scale + shift
        }
      }
      // pass 3: affine, GELU, (+ add), round
      for (int64_t i = 0; i < r; ++i) {
        const float* row = xf + i * d_p;
        const int64_t o = (s * r + i) * d;
        uint16_t* out_row = dst + o;
        const uint16_t* add_row = addp ? addp + o : nullptr;
        for (int64_t v = 0; v < full; ++v) {
          vf y = gelu_erf(load(row + v * kLanes) * load(sc + v * kLanes) + load(sh + v * kLanes));
          if (add_row) y += widen(add_row + v * kLanes);
          narrow(out_row + v * kLanes, y);
        }
        if (rest) {
          vf y = gelu_erf(load(row + full * kLanes) * load(sc + full * kLanes) + load(sh + full * kLanes));
          if (add_row) y += widen_first(add_row + full * kLanes, rest);
          narrow_first(out_row + full * kLanes, y, rest);
        }
      }
    }
  });
  return out;
}

// |z| of a complex spectrum given as its real view z (..., F, 2) fp32, rounded to bf16 (..., F):
// the patch embedding's spectral branch feeds it to a bf16 product. sqrt(re² + im²) in fp32
// (torch's complex abs guards against overflow with hypot, which costs several times more;
// spectra of 100 µV-scaled EEG are far from fp32's range).
at::Tensor spectrum_magnitude(const at::Tensor& z_in) {
  TORCH_CHECK(z_in.scalar_type() == at::kFloat && z_in.dim() >= 1 && z_in.size(-1) == 2 && z_in.device().is_cpu(),
              "spectrum_magnitude: expects an fp32 CPU tensor (..., F, 2), a complex tensor's real view");
  const at::Tensor z = z_in.contiguous();
  std::vector<int64_t> shape(z.sizes().begin(), z.sizes().end() - 1);
  at::Tensor out = at::empty(shape, z.options().dtype(at::kBFloat16));
  const int64_t n = out.numel();
  const float* src = z.data_ptr<float>();
  auto* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  static const vi even = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
  static const vi odd = even + 1;
  const auto magnitude = [](const float* pairs) {  // 16 complex values → 16 magnitudes
    const vf lo = load(pairs), hi = load(pairs + kLanes);
    const vf re = __builtin_shuffle(lo, hi, even), im = __builtin_shuffle(lo, hi, odd);
    return (vf)_mm512_sqrt_ps((__m512)(re * re + im * im));
  };
  const int64_t full = n / kLanes;
  at::parallel_for(0, full, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) narrow(dst + v * kLanes, magnitude(src + 2 * v * kLanes));
  });
  if (const int64_t len = n - full * kLanes) {  // the last few through a zero-padded block
    float pairs[2 * kLanes] = {};
    uint16_t h[kLanes];
    std::memcpy(pairs, src + 2 * full * kLanes, 2 * len * sizeof(float));
    narrow(h, magnitude(pairs));
    std::memcpy(dst + full * kLanes, h, len * sizeof(uint16_t));
  }
  return out;
}

}  // namespace

// One sample's whole criss-cross attention for amx.cpp's criss_cross_layer (the other
// translation unit; declared there): the same attend and Scratch as criss_cross_attention, so
// both give the same bits. A plain struct behind an opaque pointer, one per thread, reused over
// its samples.
namespace passport_kit_lowp {

struct SampleAttention {
  int64_t c, p, e;
  bool amx;
  Scratch spatial, temporal;
  AmxScratch amx_spatial, amx_temporal;
  SampleAttention(int64_t c_, int64_t p_, int64_t e_, int64_t heads_s, int64_t heads_t)
      : c(c_), p(p_), e(e_), amx(amx_usable()), spatial(amx ? 1 : c_, e_, heads_s),
        temporal(amx ? 1 : p_, e_, heads_t), amx_spatial(amx ? c_ : 1, e_, heads_s),
        amx_temporal(amx ? p_ : 1, e_, heads_t) {}
};

SampleAttention* sample_attention_new(int64_t c, int64_t p, int64_t e, int64_t heads_s, int64_t heads_t) {
  return new SampleAttention(c, p, e, heads_s, heads_t);
}

void sample_attention_free(SampleAttention* w) { delete w; }

// qkv: the sample's C·P token rows (channel-major, row stride ldq), columns [q_s k_s v_s | q_t k_t
// v_t]; the spatial heads' outputs go to out's columns 0.., the temporal ones' to out_t.., row stride ldo.
void sample_attention_run(SampleAttention* w, const uint16_t* qkv, int64_t ldq, uint16_t* out, int64_t ldo,
                          int64_t out_t) {
  const int64_t c = w->c, p = w->p, e = w->e;
  if (w->amx) {  // the caller (criss_cross_layer) has the tile configuration loaded
    for (int64_t i = 0; i < p; ++i) attend_amx(qkv + i * ldq, p * ldq, out + i * ldo, p * ldo, w->amx_spatial);
    for (int64_t i = 0; i < c; ++i)
      attend_amx(qkv + i * p * ldq + 3 * e, ldq, out + i * p * ldo + out_t, ldo, w->amx_temporal);
    return;
  }
  for (int64_t i = 0; i < p; ++i) attend(qkv + i * ldq, p * ldq, out + i * ldo, p * ldo, w->spatial);
  for (int64_t i = 0; i < c; ++i) attend(qkv + i * p * ldq + 3 * e, ldq, out + i * p * ldo + out_t, ldo, w->temporal);
}

}  // namespace passport_kit_lowp

TORCH_LIBRARY(passport_kit, m) {
  m.def("criss_cross_attention(Tensor qkv, int heads_s, int heads_t, bool? amx=None) -> Tensor");
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor");
  m.def("group_norm_gelu(Tensor x, int groups, Tensor weight, Tensor bias, float eps, Tensor? add) -> Tensor");
  m.def("spectrum_magnitude(Tensor z) -> Tensor");
}

TORCH_LIBRARY_IMPL(passport_kit, CPU, m) {
  m.impl("criss_cross_attention", &criss_cross_attention);
  m.impl("layer_norm", &layer_norm);
  m.impl("group_norm_gelu", &group_norm_gelu);
  m.impl("spectrum_magnitude", &spectrum_magnitude);
}
