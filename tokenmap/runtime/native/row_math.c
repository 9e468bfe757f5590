/* The decoding loop's float32 row reductions (tokenmap/decode/ct2math.py loads this library).
 *
 * CTranslate2's CPU kernels reduce a vector in `lanes` running sums (one SIMD register), add the
 * lanes in a fixed tree, then the tail element by element. tokenmap_lane_sums sums every row of a
 * [rows, n] float32 array in exactly that order (numpy computes the same bits, more slowly).
 *
 * tokenmap_log_softmax_shifts gives every row's log-softmax shift, -max - log(sum(exp(x - max))),
 * with the exponentials summed in the same order. Its exp is the Cephes polynomial of
 * CTranslate2's AVX2 exponential; the shifts are within a few ulp of numpy's.
 *
 * tokenmap_decide_row makes one row's greedy decision as tokenmap/decode/rules.py does, and gives
 * way to numpy's exact path where a comparison is close to a tie.
 *
 * Build without -ffast-math or FMA contraction: the order and rounding of the operations are the
 * point (make: -O3 -ffp-contract=off). Every version of a function computes the same bits.
 */
#include <math.h>
#include <stdint.h>

#define MAX_LANES 64

static float tree(float *acc, int64_t lanes) {
  int64_t len = lanes;
  while (len > 1) {
    int64_t half = len / 2;
    for (int64_t i = 0; i < half; ++i) acc[i] = acc[i] + acc[i + half];
    len = half;
    if (len == 4) { /* AVX2's last shuffles: (l0 + l2) and (l1 + l3) */
      float a = acc[0] + acc[2], b = acc[1] + acc[3];
      acc[0] = a;
      acc[1] = b;
      len = 2;
    }
  }
  return acc[0];
}

/* out[r] = sum of x[r * stride : r * stride + n] in CTranslate2's order; returns 0, or -1 for bad lanes. */
int tokenmap_lane_sums(const float *x, int64_t rows, int64_t n, int64_t stride, int64_t lanes, float *out) {
  if (lanes < 1 || lanes > MAX_LANES) return -1;
  for (int64_t r = 0; r < rows; ++r) {
    const float *v = x + r * stride;
    float acc[MAX_LANES];
    float total = 0.0f;
    int64_t main = 0;
    if (lanes > 1 && n > lanes) {
      main = n - n % lanes;
      for (int64_t l = 0; l < lanes; ++l) acc[l] = 0.0f;
      for (int64_t i = 0; i < main; i += lanes)
        for (int64_t l = 0; l < lanes; ++l) acc[l] = acc[l] + v[i + l];
      total = tree(acc, lanes);
    }
    for (int64_t i = main; i < n; ++i) total = total + v[i];
    out[r] = total;
  }
  return 0;
}

/* exp(x) by range reduction to x = k ln2 + r and a degree-5 polynomial in r (Cephes expf). */
static inline float poly_exp(float x) {
  x = x < 88.3762626647949f ? x : 88.3762626647949f;
  x = x > -88.3762626647949f ? x : -88.3762626647949f;
  float k = floorf(x * 1.44269504088896341f + 0.5f);
  x = x - k * 0.693359375f;
  x = x - k * -2.12194440e-4f;
  float z = x * x;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x;
  y = y + 1.0f;
  union { int32_t i; float f; } scale;
  scale.i = ((int32_t)k + 0x7f) << 23;
  return y * scale.f;
}

static float exp_sum8_generic(const float *v, int64_t main, float m) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < main; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] = acc[l] + poly_exp(v[i + l] - m);
  return tree(acc, 8);
}

static float row_max_generic(const float *v, int64_t n) {
  float m = v[0];
  for (int64_t i = 1; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

static int64_t first_at_least_generic(const float *v, int64_t n, float floor_) {
  for (int64_t i = 0; i < n; ++i)
    if (v[i] >= floor_) return i;
  return n;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* poly_exp on 8 lanes: the same operations in the same order, so the same bits. */
__attribute__((target("avx2"))) static inline __m256 poly_exp8(__m256 x) {
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f));
  __m256 k = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                           _mm256_set1_ps(0.5f)));
  x = _mm256_sub_ps(x, _mm256_mul_ps(k, _mm256_set1_ps(0.693359375f)));
  x = _mm256_sub_ps(x, _mm256_mul_ps(k, _mm256_set1_ps(-2.12194440e-4f)));
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_add_ps(_mm256_mul_ps(y, x), _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_add_ps(_mm256_mul_ps(y, z), x);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(k), _mm256_set1_epi32(0x7f)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2"))) static float exp_sum8_avx2(const float *v, int64_t main, float m) {
  __m256 acc = _mm256_setzero_ps(), vm = _mm256_set1_ps(m);
  for (int64_t i = 0; i < main; i += 8) acc = _mm256_add_ps(acc, poly_exp8(_mm256_sub_ps(_mm256_loadu_ps(v + i), vm)));
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  return tree(lanes, 8);
}

__attribute__((target("avx2"))) static float row_max_avx2(const float *v, int64_t n) {
  int64_t main = n - n % 8, i = 8;
  if (main < 8) return row_max_generic(v, n);
  __m256 best = _mm256_loadu_ps(v);
  for (; i < main; i += 8) best = _mm256_max_ps(best, _mm256_loadu_ps(v + i));
  float lanes[8];
  _mm256_storeu_ps(lanes, best);
  float m = lanes[0];
  for (int l = 1; l < 8; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (i = main; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

__attribute__((target("avx2"))) static int64_t first_at_least_avx2(const float *v, int64_t n, float floor_) {
  const __m256 f = _mm256_set1_ps(floor_);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + i), f, _CMP_GE_OQ));
    if (mask) return i + __builtin_ctz(mask);
  }
  return i + first_at_least_generic(v + i, n - i, floor_);
}

static int known = -1;

static int has_avx2(void) {
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return known;
}
/* 1: use the portable code even where AVX2 is there (the tests compare the two); returns whether AVX2 is used. */
int tokenmap_row_math_portable(int portable) {
  known = -1; /* has_avx2() asks the CPU again */
  known = portable ? 0 : has_avx2();
  return known;
}
#define EXP_SUM8(v, main, m) (has_avx2() ? exp_sum8_avx2(v, main, m) : exp_sum8_generic(v, main, m))
#define ROW_MAX(v, n) (has_avx2() ? row_max_avx2(v, n) : row_max_generic(v, n))
#define FIRST_AT_LEAST(v, n, f) (has_avx2() ? first_at_least_avx2(v, n, f) : first_at_least_generic(v, n, f))
#else
int tokenmap_row_math_portable(int portable) { (void)portable; return 0; }
#define EXP_SUM8(v, main, m) exp_sum8_generic(v, main, m)
#define ROW_MAX(v, n) row_max_generic(v, n)
#define FIRST_AT_LEAST(v, n, f) first_at_least_generic(v, n, f)
#endif

static float exp_sum(const float *v, int64_t n, int64_t lanes, float m) {
  float total = 0.0f;
  int64_t main = 0;
  if (lanes > 1 && n > lanes) {
    main = n - n % lanes;
    if (lanes == 8) {
      total = EXP_SUM8(v, main, m);
    } else {
      float acc[MAX_LANES];
      for (int64_t l = 0; l < lanes; ++l) acc[l] = 0.0f;
      for (int64_t i = 0; i < main; i += lanes)
        for (int64_t l = 0; l < lanes; ++l) acc[l] = acc[l] + poly_exp(v[i + l] - m);
      total = tree(acc, lanes);
    }
  }
  for (int64_t i = main; i < n; ++i) total = total + expf(v[i] - m);
  return total;
}

/* out[r] = -max - log(sum(exp(x - max))) of row r, the sum in CTranslate2's order (its scalar tail
 * with libm's expf); returns 0, or -1 for bad lanes or an empty row. */
int tokenmap_log_softmax_shifts(const float *x, int64_t rows, int64_t n, int64_t stride, int64_t lanes,
                                float *out) {
  if (lanes < 1 || lanes > MAX_LANES || n < 1) return -1;
  for (int64_t r = 0; r < rows; ++r) {
    const float *v = x + r * stride;
    const float m = ROW_MAX(v, n);
    out[r] = -m - logf(exp_sum(v, n, lanes, m));
  }
  return 0;
}

/* One row of greedy decoding after the logit rules have masked it (tokenmap/decode/rules.py,
 * RuleSet.choose_rows, does the same in numpy):
 *   - when `check`: if the timestamps' total probability (a float64 log-sum-exp of row[ts0..ts_end])
 *     beats the best text token's (row[0..ts0)), the text tokens are disabled (set to `disabled`);
 *   - the greedy token: the first index of the row's maximum; *shift: the row's log-softmax shift.
 * Returns the token, or -1 when a comparison is within `tol` (relative) of a tie: then the caller
 * decides on exact float32 log-probs. The row is modified only as the rules would modify it.
 * The timestamps' mass is summed in float32 (about 1e-6 relative), well inside `tol`. */
int64_t tokenmap_decide_row(float *row, int64_t n, int64_t ts0, int64_t ts_end, int64_t check, double tol,
                            int64_t lanes, float disabled, float *shift) {
  if (lanes < 1 || lanes > MAX_LANES || n < 1) return -1;
  float top;
  if (check) {
    if (ts0 < 1 || ts_end >= n || ts_end < ts0) return -1;
    float text = ROW_MAX(row, ts0);
    const float stamps_top = ROW_MAX(row + ts0, ts_end - ts0 + 1);
    const double mass = (double)stamps_top + log((double)exp_sum(row + ts0, ts_end - ts0 + 1, 8, stamps_top));
    if (fabs(mass - text) <= tol * (1.0 + fabs(mass) + fabs((double)text))) return -1;
    if (mass > text) {
      for (int64_t i = 0; i < ts0; ++i) row[i] = disabled;
      text = disabled;
    }
    const float rest = ROW_MAX(row + ts0, n - ts0);
    top = text > rest ? text : rest;
  } else {
    top = ROW_MAX(row, n);
  }
  /* the first index of the maximum, unless an earlier value is within the tolerance of it */
  const float floor_ = (float)((double)top - tol * (1.0 + fabs((double)top)));
  const int64_t best = FIRST_AT_LEAST(row, n, floor_);
  if (best == n || row[best] != top) return -1; /* a near tie (or NaN) */
  *shift = -top - logf(exp_sum(row, n, lanes, top));
  return best;
}
