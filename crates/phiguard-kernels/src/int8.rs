//! int8 dense layers on AVX-512 VNNI: `x @ Wᵀ` with the weight quantized once at load and
//! the activations quantized per row on every call.
//!
//! # Why
//! f32 GEMM is ~80 % of a forward pass on the CPU (see `phiguard::inference`), and gemm's
//! AVX-512 f32 kernel already runs near the core's f32 limit. `vpdpbusd` multiplies 64
//! `u8 × i8` pairs per instruction where an f32 FMA does 16. candle's own quantized matmul
//! (`QMatMul`) does not fit here: its fast x86 kernels need K to be a multiple of 256 (this
//! model's hidden size is 384) and its activation quantizer is scalar.
//!
//! # Numerics
//! - Weights: symmetric int8 per output column, `w ≈ s_w[n] · q_w[k, n]`.
//! - Activations: asymmetric u8 per row, `x ≈ s_x[m] · q_x[m, k] + min_x[m]`, so a skewed
//!   row (after GELU, after LayerNorm with outlier channels) keeps all 256 levels.
//! - `Σ_k x·w ≈ s_w[n] · (s_x[m] · Σ_k q_x·q_w + min_x[m] · Σ_k q_w[k, n])`, the integer sum
//!   exact in i32 (at most 255 · 127 · K, below 2³¹ for K ≤ 65,000).
//! - On the AVX2 path the weights are 7-bit (see below).
//!
//! x86-64 with `avx512f`, `avx512bw`, `avx512vnni` and `fma` runs this path; x86-64 with
//! only `avx2` and `fma` (most laptops and desktops: Intel's client cores from Alder Lake
//! on, AMD's before Zen 4) runs them through `vpmaddubsw` (module `avx2`);
//! [`Int8Weights::new`] returns `None` elsewhere and the caller keeps f32.
//!
//! # AVX2
//! AVX2 has no `vpdpbusd`. Its nearest, `vpmaddubsw`, multiplies 32 `u8 × i8` pairs and adds
//! adjacent products in i16, which saturates for 8-bit weights (255 · 127 · 2 > 2¹⁵). So on
//! a CPU whose int8 path is AVX2 (module `avx2`) the weights are quantized to 7 bits
//! (`[-63, 63]`, the scale `max|w| / 63`): 255 · 63 · 2 = 32,130 fits, and a `vpmaddwd` by
//! ones then adds each column's pairs into i32. The integer sums are exact, as on the VNNI
//! path, and the dequantizing epilogue is the VNNI path's (the same fused multiply-adds,
//! eight lanes at a time); the weights carry one bit less. On the bundled model that moved
//! no token's label against f32 (`tests/precision.rs`), and the outside-eval figures by at
//! most 0.005, as much as 8-bit weights moved them. onnxruntime's quantizer offers the same
//! trade for AVX2 (`reduce_range`).
//! Widening the 8-bit weights to i16 (`vpmovsxbw`) for an exact `vpmaddwd` instead ran at
//! 33–50 GMAC/s on one core of a Zen 3 EPYC against 52–68 for this, whole `deid` runs
//! 1.4–1.5× slower. The GELU's reciprocal differs from the VNNI path's (`vrcpps` instead
//! of `vrcp14ps`, each with one Newton step), within 1e-6 of the scalar GELU either way.
//!
//! # AMX
//! Where the CPU also has AMX-INT8 (Sapphire Rapids and later) and Linux grants the process
//! the tile registers, the integer products run on the tile unit instead (module `amx`):
//! one `tdpbusd` multiplies a 16 × 64 block of activations by a 64 × 16 block of weights,
//! 16 times the work of a `vpdpbusd`. The weights keep the one packing: a tile of them is 16
//! of the VNNI path's lanes read at a stride. The integer sums are exact either way and the
//! two paths share the dequantizing epilogue, so they give the same bits.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape};

type CResult<T> = candle_core::Result<T>;

/// Columns per register: sixteen i32 accumulators.
pub(crate) const BLOCK_N: usize = 16;
/// Registers of columns per tile: a tile is 48 columns wide.
pub(crate) const TILE_V: usize = 3;
/// Consecutive K values multiplied and summed by one `vpdpbusd` lane.
pub(crate) const BLOCK_K: usize = 4;
/// Rows per register tile: 8 rows × 3 registers = 24 accumulators, plus three weight
/// registers and one broadcast, of AVX-512's 32.
pub(crate) const TILE_M: usize = 8;

/// Four K-consecutive weights of sixteen columns: one `vpdpbusd` operand.
pub(crate) type Lane = [i8; BLOCK_N * BLOCK_K];

/// A weight `Wᵀ: [k, n]` quantized to int8 and packed for `vpdpbusd`.
pub struct Int8Weights {
    k: usize,
    n: usize,
    /// The largest |q_w| (see [`Int8Weights::weight_max`]).
    max: f32,
    /// Tile `t` of 48 columns, step `kk`: at `t * (k / 4) + kk`, the weights at rows
    /// `4kk..4kk+4` of columns `48t..48t+48`, 16 columns per lane, the four rows of a
    /// column adjacent. Columns past `n` are zero.
    packed: Vec<[Lane; TILE_V]>,
    /// Per column (padded to the tiles): the weight scale `s_w`.
    scale: Vec<f32>,
    /// Per column (padded): `Σ_k q_w[k, n]`, which carries the activations' zero point.
    col_sum: Vec<f32>,
}

impl std::fmt::Debug for Int8Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Int8Weights")
            .field("k", &self.k)
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

/// `x.round()` (half away from zero), bit for bit, without the call to libm's `roundf` that
/// `f32::round` compiles to on a baseline x86-64 target (no SSE4.1): quantizing the bundled
/// model's 10.6M weights at load made that call for each one.
#[inline(always)]
fn round_half_away(x: f32) -> f32 {
    // 2^23: adding it to a value in [0, 2^23) leaves an integer, the nearest (ties to even).
    const SHIFTER: f32 = 8_388_608.0;
    let a = x.abs();
    if a.is_nan() || a >= SHIFTER {
        // Already an integer, infinite or NaN: as `round` leaves them.
        return x;
    }
    let r = (a + SHIFTER) - SHIFTER;
    // A tie went to the even integer below; `round` takes the one away from zero.
    let r = if r - a == -0.5 { r + 1.0 } else { r };
    r.copysign(x)
}

/// Whether this CPU runs the AVX-512 VNNI path (and `attention`'s VNNI products).
pub(crate) fn vnni_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
            // The fused GELU's multiply-adds (every AVX-512 CPU has FMA; checked anyway).
            && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AVX2 path (module `avx2`).
pub(crate) fn avx2_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Int8Weights {
    /// Whether this CPU runs the int8 path (AVX-512 VNNI or AVX2).
    pub fn supported() -> bool {
        vnni_supported() || avx2_supported()
    }

    /// The int8 kernel this CPU runs: `"AMX"`, `"AVX-512 VNNI"`, `"AVX2"`, or `None` (f32).
    pub fn kernel() -> Option<&'static str> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if amx::usable(amx::TILE_K) {
            return Some("AMX");
        }
        if vnni_supported() {
            Some("AVX-512 VNNI")
        } else if avx2_supported() {
            Some("AVX2")
        } else {
            None
        }
    }

    /// Quantizes `w_t: [k, n]` (row-major, i.e. `Wᵀ`). `None` when the CPU lacks both, `k`
    /// is not a multiple of 4, or `n` is not a multiple of 16 (narrow heads stay f32).
    pub fn new(w_t: &[f32], k: usize, n: usize) -> Option<Int8Weights> {
        if w_t.len() != k * n {
            return None;
        }
        Self::from_transpose(w_t, k, n, Self::weight_max())
    }

    /// [`build`](Self::build) from `w_t: [k, n]`, whose columns are strided.
    fn from_transpose(w_t: &[f32], k: usize, n: usize, max: f32) -> Option<Int8Weights> {
        Self::build(k, n, max, |col, out| {
            for (row, o) in out.iter_mut().enumerate() {
                *o = w_t[row * n + col];
            }
        })
    }

    /// As [`new`](Self::new), from `w: [n, k]` (row-major: a linear layer's weight as
    /// checkpoints store it), whose rows are `Wᵀ`'s columns: no transposed copy is needed.
    pub fn from_rows(w: &[f32], n: usize, k: usize) -> Option<Int8Weights> {
        if w.len() != k * n {
            return None;
        }
        Self::build(k, n, Self::weight_max(), |col, out| {
            out.copy_from_slice(&w[col * k..(col + 1) * k]);
        })
    }

    /// The largest |q_w| this CPU's kernel takes: 127 where the products run on VNNI or
    /// AMX, [`avx2::WEIGHT_MAX`] (63) on the AVX2 path.
    fn weight_max() -> f32 {
        #[cfg(target_arch = "x86_64")]
        if !vnni_supported() {
            return avx2::WEIGHT_MAX;
        }
        127.0
    }

    /// Quantizes the `[k, n]` matrix whose column `col` `column(col, out)` writes into `out`
    /// (`k` values) to integers in `[-max, max]`, straight into the packed layout.
    ///
    /// One column at a time, in a contiguous buffer: its scale, its values and its sum are
    /// then plain loops the compiler vectorizes, and only the 4-value groups are scattered
    /// into the tiles. Reading the matrix element by element in the tiles' order (as this
    /// did before) took 4 ns a weight, 40 ms of every start with the bundled model.
    fn build(
        k: usize,
        n: usize,
        max: f32,
        column: impl Fn(usize, &mut [f32]),
    ) -> Option<Int8Weights> {
        if !Self::supported()
            || k == 0
            || n == 0
            || !k.is_multiple_of(BLOCK_K)
            || !n.is_multiple_of(BLOCK_N)
        {
            return None;
        }
        let tiles = n.div_ceil(BLOCK_N * TILE_V);
        let padded = tiles * BLOCK_N * TILE_V;
        let steps = k / BLOCK_K;
        // Columns past `n` stay zero.
        let mut scale = vec![0f32; padded];
        let mut col_sum = vec![0f32; padded];
        let mut packed = vec![[[0i8; BLOCK_N * BLOCK_K]; TILE_V]; tiles * steps];
        let mut values = vec![0f32; k];
        let mut q = vec![0i8; k];
        for col in 0..n {
            column(col, &mut values);
            let s = values.iter().fold(0f32, |m, v| m.max(v.abs())) / max;
            scale[col] = s;
            let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
            for (q, v) in q.iter_mut().zip(&values) {
                *q = round_half_away(v * inv).clamp(-max, max) as i8;
            }
            // The values are integers of at most 127 and k is at most a few thousand: their
            // sum is exact in i32 and in f32 alike, whatever the order.
            col_sum[col] = q.iter().map(|&v| i32::from(v)).sum::<i32>() as f32;
            let (t, v, c) = (
                col / (BLOCK_N * TILE_V),
                (col / BLOCK_N) % TILE_V,
                col % BLOCK_N,
            );
            for (kk, group) in q.chunks_exact(BLOCK_K).enumerate() {
                packed[t * steps + kk][v][c * BLOCK_K..(c + 1) * BLOCK_K].copy_from_slice(group);
            }
        }
        Some(Int8Weights {
            k,
            n,
            max,
            packed,
            scale,
            col_sum,
        })
    }

    /// Input width.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Output width.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `x @ Wᵀ` for `x: [m, k]` row-major; returns `[m, n]`.
    ///
    /// # Panics
    /// When `x.len()` is not a multiple of `k`.
    pub fn matmul(&self, x: &[f32]) -> Vec<f32> {
        self.product(x, None)
    }

    /// `gelu(x @ Wᵀ + bias)` (the erf form, as [`crate::BiasGelu`] computes it, in AVX-512
    /// registers: within 5e-7 of it on [-12, 12]) in
    /// one pass: each block of the product goes through the GELU as it is written, so the
    /// `[m, n]` product is not written, read back and written again.
    ///
    /// # Panics
    /// When `x.len()` is not a multiple of `k` or `bias` is not `n` long.
    pub fn matmul_bias_gelu(&self, x: &[f32], bias: &[f32]) -> Vec<f32> {
        assert_eq!(bias.len(), self.n, "int8 matmul: bias is not [n]");
        self.product(x, Some(bias))
    }

    fn product(&self, x: &[f32], gelu_bias: Option<&[f32]>) -> Vec<f32> {
        assert!(
            x.len().is_multiple_of(self.k),
            "int8 matmul: x is not [m, k]"
        );
        let m = x.len() / self.k;
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if amx::usable(self.k) {
            let rows = m.div_ceil(amx::TILE_ROWS) * amx::TILE_ROWS;
            // Row-major u8, the rows past `m` zero (the tiles read whole blocks of rows).
            let mut a = vec![0u8; rows * self.k];
            let mut row_scale = vec![0f32; m];
            let mut row_min = vec![0f32; m];
            return self.filled(m, gelu_bias, |out| {
                #[allow(unsafe_code)]
                // SAFETY: `usable` held: the CPU has AVX-512 VNNI and AMX-INT8 and the
                // process was granted the tile state; `a` holds whole blocks of rows.
                unsafe {
                    vnni::quantize_rows(x, self.k, &mut a, &mut row_scale, &mut row_min);
                    amx::gemm(self, &a, &row_scale, &row_min, out);
                }
            });
        }
        if vnni_supported() {
            return self.product_vnni(x, m, gelu_bias);
        }
        self.product_avx2(x, m, gelu_bias)
    }

    /// [`product`](Self::product) on the AVX2 path.
    fn product_avx2(&self, x: &[f32], m: usize, gelu_bias: Option<&[f32]>) -> Vec<f32> {
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, gelu_bias);
            vec![0.0; m * self.n]
        }
        #[cfg(target_arch = "x86_64")]
        {
            // Wider weights would saturate `vpmaddubsw`'s sums (see `avx2::WEIGHT_MAX`).
            assert!(
                self.max <= avx2::WEIGHT_MAX,
                "int8 matmul: these weights are for the VNNI path"
            );
            let steps = self.k / BLOCK_K;
            let mut a = vec![[0u32; avx2::TILE_M]; m.div_ceil(avx2::TILE_M) * steps];
            let mut row_scale = vec![0f32; m];
            let mut row_min = vec![0f32; m];
            // Not zeroed first, as `filled` does for the VNNI path (3 % of a `deid` run).
            let len = m * self.n;
            let mut out = Vec::with_capacity(len);
            let dst = &mut out.spare_capacity_mut()[..len];
            #[allow(unsafe_code)]
            // SAFETY: an `Int8Weights` exists only when `supported()` held at construction,
            // and this path is taken only without VNNI: the CPU has AVX2 and FMA, all that
            // `avx2::quantize` and `avx2::gemm` are compiled for.
            let written = unsafe {
                avx2::quantize(x, self.k, &mut a, &mut row_scale, &mut row_min);
                avx2::gemm(self, &a, &row_scale, &row_min, gelu_bias, dst)
            };
            // The gemm visits every (row < m, 16-column block < n) once and writes it whole;
            // the count checks that at run time, so no element is left uninitialised.
            assert_eq!(
                written, len,
                "int8 matmul: the product was not written whole"
            );
            #[allow(unsafe_code)]
            // SAFETY: the `len` elements were initialised by `avx2::gemm` (counted above).
            unsafe {
                out.set_len(len);
            }
            out
        }
    }

    /// [`product`](Self::product) on the AVX-512 VNNI path alone (the AMX path's
    /// reference).
    fn product_vnni(&self, x: &[f32], m: usize, gelu_bias: Option<&[f32]>) -> Vec<f32> {
        #[cfg(not(target_arch = "x86_64"))]
        {
            // No `Int8Weights` exists off x86-64 (`new` returns `None`).
            let _ = (x, gelu_bias);
            vec![0.0; m * self.n]
        }
        #[cfg(target_arch = "x86_64")]
        {
            let steps = self.k / BLOCK_K;
            // Row tiles of 8, K-step-major: the 8 broadcasts of a step are adjacent.
            let mut a = vec![[0i32; TILE_M]; m.div_ceil(TILE_M) * steps];
            let mut row_scale = vec![0f32; m];
            let mut row_min = vec![0f32; m];
            self.filled(m, gelu_bias, |out| {
                #[allow(unsafe_code)]
                // SAFETY: an `Int8Weights` exists only when `supported()` held at
                // construction: the CPU has every feature `vnni::quantize` and `vnni::gemm`
                // are compiled for.
                unsafe {
                    vnni::quantize(x, self.k, &mut a, &mut row_scale, &mut row_min);
                    vnni::gemm(self, &a, &row_scale, &row_min, out);
                }
            })
        }
    }

    /// The `[m, n]` result `write` fills through a [`Sink`], allocated without being zeroed
    /// first (zeroing it cost about 3 % of a `deid` run: these are the largest buffers of a
    /// forward pass, and the allocator hands them back recycled, so `calloc` must clear them).
    #[cfg(target_arch = "x86_64")]
    fn filled(
        &self,
        m: usize,
        gelu_bias: Option<&[f32]>,
        write: impl FnOnce(&mut Sink),
    ) -> Vec<f32> {
        let len = m * self.n;
        let mut out = Vec::with_capacity(len);
        let mut sink = Sink {
            out: &mut out.spare_capacity_mut()[..len],
            n: self.n,
            gelu_bias,
            written: 0,
        };
        write(&mut sink);
        // Both gemms visit every (row < m, 16-column block < n) once and write it whole;
        // the count checks that at run time, so no element is left uninitialised.
        assert_eq!(
            sink.written, len,
            "int8 matmul: the product was not written whole"
        );
        #[allow(unsafe_code)]
        // SAFETY: the `len` elements were initialised through `Sink::put` (above).
        unsafe {
            out.set_len(len);
        }
        out
    }
}

/// Where the gemms write a product: the rows of the uninitialised result, and the GELU of
/// [`Int8Weights::matmul_bias_gelu`] applied on the way.
#[cfg(target_arch = "x86_64")]
struct Sink<'a> {
    out: &'a mut [std::mem::MaybeUninit<f32>],
    n: usize,
    gelu_bias: Option<&'a [f32]>,
    /// Elements written, for the check in [`Int8Weights::filled`].
    written: usize,
}

#[cfg(target_arch = "x86_64")]
impl Sink<'_> {
    /// Writes the 16 columns from `c0` of `row` (through the GELU with the bias of those
    /// columns, where there is one). Called from the gemms, compiled for the same features.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn put(&mut self, row: usize, c0: usize, y: std::arch::x86_64::__m512) {
        let y = match self.gelu_bias {
            Some(bias) => vnni::gelu16(std::arch::x86_64::_mm512_add_ps(
                y,
                vnni::load(&bias[c0..c0 + BLOCK_N]),
            )),
            None => y,
        };
        let y: [f32; BLOCK_N] = bytemuck::cast(y);
        let dst = &mut self.out[row * self.n + c0..][..BLOCK_N];
        for (o, v) in dst.iter_mut().zip(y) {
            o.write(v);
        }
        self.written += BLOCK_N;
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod vnni {
    use std::arch::x86_64::{
        __m512, __m512i, _mm512_abs_ps, _mm512_cvtepi32_ps, _mm512_cvttps_epu32,
        _mm512_cvtusepi32_epi8, _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_fnmadd_ps,
        _mm512_max_ps, _mm512_min_ps, _mm512_mul_ps, _mm512_rcp14_ps, _mm512_reduce_max_ps,
        _mm512_reduce_min_ps, _mm512_roundscale_ps, _mm512_scalef_ps, _mm512_set1_epi32,
        _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512, _mm512_sub_ps,
        _mm512_ternarylogic_epi32, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT,
    };

    use super::{Int8Weights, Sink, BLOCK_K, BLOCK_N, TILE_M, TILE_V};

    /// Lanes of the min/max reductions and of the quantizing loop (one register).
    const LANES: usize = 16;

    /// Quantizes each row of `x: [m, k]` to u8 with its own scale and minimum
    /// (`x ≈ scale · q + min`) and writes it packed for [`gemm`]: row `r`'s bytes
    /// `4kk..4kk+4` as one `i32` at `a[(r / 8) * (k / 4) + kk][r % 8]`. The range always
    /// includes 0, so it is never empty and a row of zeros quantizes exactly. Rounds half
    /// up (`+ 0.5`, then truncate: the values are ≥ 0).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(crate) fn quantize(
        x: &[f32],
        k: usize,
        a: &mut [[i32; TILE_M]],
        scale: &mut [f32],
        min: &mut [f32],
    ) {
        let steps = k / BLOCK_K;
        let mut q = vec![0u8; k];
        for (r, ((xr, s), mn)) in x
            .chunks_exact(k)
            .zip(scale.iter_mut())
            .zip(min.iter_mut())
            .enumerate()
        {
            (*s, *mn) = quantize_row(xr, &mut q);
            let tile = &mut a[(r / TILE_M) * steps..][..steps];
            for (slot, b) in tile.iter_mut().zip(q.chunks_exact(BLOCK_K)) {
                slot[r % TILE_M] = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
    }

    /// Quantizes each row of `x: [m, k]` as [`quantize`] does, into the first `m` rows of
    /// the row-major `a: [.., k]` (the AMX path's layout).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) fn quantize_rows(
        x: &[f32],
        k: usize,
        a: &mut [u8],
        scale: &mut [f32],
        min: &mut [f32],
    ) {
        for (((xr, q), s), mn) in x
            .chunks_exact(k)
            .zip(a.chunks_exact_mut(k))
            .zip(scale.iter_mut())
            .zip(min.iter_mut())
        {
            (*s, *mn) = quantize_row(xr, q);
        }
    }

    /// One row to u8 in `q` (as long as `xr`); returns its `(scale, min)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn quantize_row(xr: &[f32], q: &mut [u8]) -> (f32, f32) {
        let (mut lo, mut hi) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut chunks = xr.chunks_exact(LANES);
        for c in &mut chunks {
            let v = load(c);
            lo = _mm512_min_ps(lo, v);
            hi = _mm512_max_ps(hi, v);
        }
        let (mut l, mut h) = (_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi));
        for &v in chunks.remainder() {
            l = l.min(v);
            h = h.max(v);
        }
        let step = (h - l) / 255.0;
        if step > 0.0 && step.is_finite() {
            let inv = 1.0 / step;
            let (lv, iv, half) = (_mm512_set1_ps(l), _mm512_set1_ps(inv), _mm512_set1_ps(0.5));
            let mut out = q.chunks_exact_mut(LANES);
            let mut ins = xr.chunks_exact(LANES);
            for (o, c) in (&mut out).zip(&mut ins) {
                let t = _mm512_fmadd_ps(_mm512_sub_ps(load(c), lv), iv, half);
                let b: [u8; 16] = bytemuck::cast(_mm512_cvtusepi32_epi8(_mm512_cvttps_epu32(t)));
                o.copy_from_slice(&b);
            }
            for (o, &v) in out.into_remainder().iter_mut().zip(ins.remainder()) {
                *o = ((v - l) * inv + 0.5) as u8;
            }
            (step, l)
        } else {
            q.fill(0);
            (0.0, 0.0)
        }
    }

    /// `out[m, n] = s_w · (s_x · Σ q_x·q_w + min_x · Σ q_w)`, one 8 × 48 register tile at a
    /// time (rows past `m` are zeros in `a` and are not stored; columns past `n` neither).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
    pub(super) fn gemm(
        w: &Int8Weights,
        a: &[[i32; TILE_M]],
        s_x: &[f32],
        min_x: &[f32],
        out: &mut Sink,
    ) {
        let (k, n, m) = (w.k, w.n, s_x.len());
        let steps = k / BLOCK_K;
        for (rt, a_tile) in a.chunks_exact(steps).enumerate() {
            let rows = (m - rt * TILE_M).min(TILE_M);
            for (t, w_tile) in w.packed.chunks_exact(steps).enumerate() {
                let acc = tile_rows(rows, a_tile, w_tile);
                for (v, acc_v) in acc.iter().enumerate() {
                    let c0 = (t * TILE_V + v) * BLOCK_N;
                    if c0 >= n {
                        break;
                    }
                    let (sw, cs) = column_block(w, c0);
                    for (i, &acc_row) in acc_v[..rows].iter().enumerate() {
                        let row = rt * TILE_M + i;
                        let y = dequantize(acc_row, s_x[row], min_x[row], sw, cs);
                        out.put(row, c0, y);
                    }
                }
            }
        }
    }

    /// [`tile`] for the first `rows` (1 to 8) rows of the tile: a last tile of fewer rows
    /// multiplies only those, so one note of 37 tokens is 37 rows, not 40 (a small batch, as
    /// a server with few clients runs, would otherwise spend up to 7 rows in 8 on padding).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(crate) fn tile_rows<const V: usize>(
        rows: usize,
        a_tile: &[[i32; TILE_M]],
        w_tile: &[[super::Lane; V]],
    ) -> [[__m512i; TILE_M]; V] {
        match rows {
            8 => tile::<8, V>(a_tile, w_tile),
            7 => tile::<7, V>(a_tile, w_tile),
            6 => tile::<6, V>(a_tile, w_tile),
            5 => tile::<5, V>(a_tile, w_tile),
            4 => tile::<4, V>(a_tile, w_tile),
            3 => tile::<3, V>(a_tile, w_tile),
            2 => tile::<2, V>(a_tile, w_tile),
            _ => tile::<1, V>(a_tile, w_tile),
        }
    }

    /// The integer sums of the first `R` rows of one 8-row tile of activations against `V`
    /// registers of 16 columns of weights (48 columns for the dense layers, 32 for
    /// attention's `E·V`), by column register then row (rows past `R` stay zero). A function
    /// of its own so that its accumulators live in registers for the whole loop over K:
    /// inlined into `gemm` beside the epilogue, one build kept them in registers and another
    /// (a microbenchmark's) stored all 24 to the stack at every step, at about a third of
    /// the speed.
    #[inline(never)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn tile<const R: usize, const V: usize>(
        a_tile: &[[i32; TILE_M]],
        w_tile: &[[super::Lane; V]],
    ) -> [[__m512i; TILE_M]; V] {
        let mut acc = [[_mm512_setzero_si512(); TILE_M]; V];
        for (ak, wk) in a_tile.iter().zip(w_tile) {
            let b: [__m512i; V] = std::array::from_fn(|v| bytemuck::cast(wk[v]));
            for (i, &a4) in ak[..R].iter().enumerate() {
                let av = _mm512_set1_epi32(a4);
                for (acc_v, &bv) in acc.iter_mut().zip(&b) {
                    acc_v[i] = _mm512_dpbusd_epi32(acc_v[i], av, bv);
                }
            }
        }
        acc
    }

    /// The weight scales and column sums of the 16 columns from `c0`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn column_block(w: &Int8Weights, c0: usize) -> (__m512, __m512) {
        (
            load(&w.scale[c0..c0 + BLOCK_N]),
            load(&w.col_sum[c0..c0 + BLOCK_N]),
        )
    }

    /// Sixteen integer sums of one row back to f32: `s_w · (s_x · acc + min_x · Σ q_w)`.
    /// Both paths call this, so they round alike.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn dequantize(acc: __m512i, s_x: f32, min_x: f32, sw: __m512, cs: __m512) -> __m512 {
        let y = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(acc),
            _mm512_set1_ps(s_x),
            _mm512_mul_ps(cs, _mm512_set1_ps(min_x)),
        );
        _mm512_mul_ps(y, sw)
    }

    /// GELU of sixteen lanes, the erf form: [`crate::gelu`]'s formula (Abramowitz & Stegun
    /// 7.1.26 for erf, the same polynomial for e^x) in AVX-512 registers. Written out rather
    /// than left to the compiler, which vectorized the scalar form with a `vdivps` and
    /// scalar bookkeeping: the epilogue of the intermediate layer's product cost about as
    /// much as the product. Here the division is `vrcp14ps` and one Newton step (relative
    /// error near 2^-28, below f32's), 2^k is `vscalefps`, and the sign is one
    /// `vpternlogd`. Within 1e-6 of the scalar form (unit test), whose erf is itself within
    /// 1e-6 of the true one.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    pub(super) fn gelu16(x: __m512) -> __m512 {
        let one = _mm512_set1_ps(1.0);
        let xs = _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2));
        // |x|/√2, capped at 8: erf is 1 in f32 from about 3.9 on, and the cap keeps an
        // infinite input from turning `t` and e^(−a²) into NaN.
        let a = _mm512_min_ps(_mm512_abs_ps(xs), _mm512_set1_ps(8.0));
        // t = 1 / (1 + p·a), then one Newton step: t·(2 − d·t).
        let d = _mm512_fmadd_ps(a, _mm512_set1_ps(0.327_591_1), one);
        let r = _mm512_rcp14_ps(d);
        let t = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0)));
        let mut poly = _mm512_set1_ps(1.061_405_4);
        for c in [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
            poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(c));
        }
        poly = _mm512_mul_ps(poly, t);
        // e^(−a²), a² in [0, 64].
        let e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
        // erf(|x|/√2) = 1 − poly·e, then the sign of x: `vpternlogd` with table 0xB8 takes
        // each bit from its third operand (`xs`) where the second (the sign mask) is set,
        // from its first (`y`) elsewhere.
        let y = _mm512_fnmadd_ps(poly, e, one);
        let sign: __m512i = bytemuck::cast(_mm512_set1_ps(-0.0));
        let erf: __m512 = bytemuck::cast(_mm512_ternarylogic_epi32::<0xB8>(
            bytemuck::cast(y),
            sign,
            bytemuck::cast(xs),
        ));
        let half = _mm512_mul_ps(x, _mm512_set1_ps(0.5));
        _mm512_fmadd_ps(half, erf, half)
    }

    /// e^z of sixteen lanes for z ≤ 0 (below −87, about 1.6e−38, which the callers round
    /// to 0), reduced as `crate::exp_parts` does: k = round(z / ln 2) by `vrndscaleps`,
    /// Cephes' two-part ln 2, the same polynomial, 2^k by `vscalefps`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    pub(crate) fn exp16(z: __m512) -> __m512 {
        let z = _mm512_max_ps(z, _mm512_set1_ps(-87.0));
        let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(z, _mm512_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693_359_4), z);
        let r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.121_944_4e-4), r);
        let mut p = _mm512_set1_ps(0.001_388_888_9);
        for c in [0.008_333_334, 0.041_666_668, 0.166_666_67, 0.5, 1.0, 1.0] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, k)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn load(xs: &[f32]) -> __m512 {
        let a: [f32; 16] = xs.try_into().expect("16 lanes");
        bytemuck::cast(a)
    }
}

/// The int8 path on AVX2 (see the module's doc): the VNNI path's integer sums and epilogue
/// in eight-lane registers.
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::{
        __m256, __m256i, _mm256_add_epi32, _mm256_add_ps, _mm256_and_ps, _mm256_andnot_ps,
        _mm256_cvtepi32_ps, _mm256_cvtps_epi32, _mm256_cvttps_epi32, _mm256_extract_epi32,
        _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_max_ps,
        _mm256_min_ps, _mm256_mul_ps, _mm256_or_ps, _mm256_rcp_ps, _mm256_round_ps,
        _mm256_set1_epi16, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi8, _mm256_setzero_ps,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_slli_epi32, _mm256_sub_ps,
        _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT,
    };

    use std::mem::MaybeUninit;

    use super::{Int8Weights, Lane, BLOCK_K, BLOCK_N, TILE_V};

    /// Lanes of one register.
    const LANES: usize = 8;
    /// The largest |q_w| of the AVX2 path's weights: `vpmaddubsw` adds two u8 × i8 products
    /// in i16, and 2 · 255 · 63 = 32,130 < 2¹⁵, so its sums never saturate.
    pub(crate) const WEIGHT_MAX: f32 = 63.0;
    /// Rows per register tile: 4 rows × 2 registers (16 columns) = 8 accumulators, beside
    /// the two weight registers, the ones and two products, in AVX2's 16 registers.
    pub(crate) const TILE_M: usize = 4;
    /// Rows of a block whose activations stay in cache while every column strip of the
    /// weights passes over them (16 rows × 1,536 K as u8: 24 KiB).
    const BLOCK_M: usize = 4 * TILE_M;

    /// Quantizes each row of `x: [m, k]` as `vnni::quantize` does (the same scale, minimum
    /// and bytes), into row tiles of 4, K-step-major: row `r`'s four bytes of K-step `kk`
    /// at `a[(r / 4) * (k / 4) + kk][r % 4]`, so a tile reads one slot per K-step.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn quantize(
        x: &[f32],
        k: usize,
        a: &mut [[u32; TILE_M]],
        scale: &mut [f32],
        min: &mut [f32],
    ) {
        let steps = k / BLOCK_K;
        let mut q = vec![0u8; k];
        for (r, (xr, (s, mn))) in x
            .chunks_exact(k)
            .zip(scale.iter_mut().zip(min.iter_mut()))
            .enumerate()
        {
            (*s, *mn) = quantize_row(xr, &mut q);
            let tile = &mut a[(r / TILE_M) * steps..][..steps];
            for (slot, b) in tile.iter_mut().zip(q.chunks_exact(BLOCK_K)) {
                slot[r % TILE_M] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
    }

    /// One row to u8 in `q`; returns its `(scale, min)`: `vnni::quantize_row` (the range
    /// includes 0; `(x − min) · (1 / step) + 0.5` in one fused multiply-add, truncated).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn quantize_row(xr: &[f32], q: &mut [u8]) -> (f32, f32) {
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut chunks = xr.chunks_exact(LANES);
        for c in &mut chunks {
            let v = load(c);
            lo = _mm256_min_ps(lo, v);
            hi = _mm256_max_ps(hi, v);
        }
        let lo: [f32; LANES] = bytemuck::cast(lo);
        let hi: [f32; LANES] = bytemuck::cast(hi);
        let mut l = lo.iter().fold(0f32, |m, &v| m.min(v));
        let mut h = hi.iter().fold(0f32, |m, &v| m.max(v));
        for &v in chunks.remainder() {
            l = l.min(v);
            h = h.max(v);
        }
        let step = (h - l) / 255.0;
        if step > 0.0 && step.is_finite() {
            let inv = 1.0 / step;
            let (lv, iv) = (_mm256_set1_ps(l), _mm256_set1_ps(inv));
            let (half, top) = (_mm256_set1_ps(0.5), _mm256_set1_ps(255.0));
            let mut out = q.chunks_exact_mut(LANES);
            let mut ins = xr.chunks_exact(LANES);
            for (o, c) in (&mut out).zip(&mut ins) {
                let t = _mm256_fmadd_ps(_mm256_sub_ps(load(c), lv), iv, half);
                // `t` is in [0, 255.5]: capping it at 255 before truncating is the VNNI
                // path's saturating conversion.
                let [lo, hi] = low_bytes(_mm256_cvttps_epi32(_mm256_min_ps(t, top)));
                o.copy_from_slice(&(u64::from(lo) | (u64::from(hi) << 32)).to_le_bytes());
            }
            for (o, &v) in out.into_remainder().iter_mut().zip(ins.remainder()) {
                *o = ((v - l) * inv + 0.5) as u8;
            }
            (step, l)
        } else {
            q.fill(0);
            (0.0, 0.0)
        }
    }

    /// `out[m, n] = s_w · (s_x · Σ q_x·q_w + min_x · Σ q_w)` (then `gelu(· + bias)` where
    /// `gelu_bias` is given), by blocks of rows, then 16-column strips of the weights (one
    /// lane of each K-step: at most 24 KiB per 1,536 K, in L2 while a block's rows pass),
    /// then tiles of four rows. Returns the number of values written.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn gemm(
        w: &Int8Weights,
        a: &[[u32; TILE_M]],
        s_x: &[f32],
        min_x: &[f32],
        gelu_bias: Option<&[f32]>,
        out: &mut [MaybeUninit<f32>],
    ) -> usize {
        let (k, n, m) = (w.k, w.n, s_x.len());
        let steps = k / BLOCK_K;
        assert!(
            a.len() == m.div_ceil(TILE_M) * steps && min_x.len() == m && out.len() == m * n,
            "int8 avx2: shapes do not match"
        );
        let mut written = 0;
        for b0 in (0..m).step_by(BLOCK_M) {
            let end = (b0 + BLOCK_M).min(m);
            for (t, strips) in w.packed.chunks_exact(steps).enumerate() {
                for v in 0..TILE_V {
                    let c0 = (t * TILE_V + v) * BLOCK_N;
                    if c0 >= n {
                        break;
                    }
                    let mut r0 = b0;
                    while r0 < end {
                        let rows = (end - r0).min(TILE_M);
                        let tile = Tile {
                            w,
                            strips,
                            v,
                            c0,
                            a: &a[(r0 / TILE_M) * steps..][..steps],
                            s_x: &s_x[r0..],
                            min_x: &min_x[r0..],
                            gelu_bias,
                        };
                        let dst = &mut out[r0 * n..];
                        match rows {
                            4 => tile.run::<4>(dst),
                            3 => tile.run::<3>(dst),
                            2 => tile.run::<2>(dst),
                            _ => tile.run::<1>(dst),
                        }
                        written += rows * BLOCK_N;
                        r0 += rows;
                    }
                }
            }
        }
        written
    }

    /// One register tile: up to four rows (a row tile of `a`; the first of `s_x`, `min_x`)
    /// against the 16 columns from `c0`, lane `v` of every K-step of `strips`.
    struct Tile<'a> {
        w: &'a Int8Weights,
        strips: &'a [[Lane; TILE_V]],
        v: usize,
        c0: usize,
        a: &'a [[u32; TILE_M]],
        s_x: &'a [f32],
        min_x: &'a [f32],
        gelu_bias: Option<&'a [f32]>,
    }

    impl Tile<'_> {
        /// The first `R` rows' [`sums`], then their epilogue into `out` (row `i` at
        /// `i · n + c0`). Not inlined, as `vnni::tile` is not, so that the accumulators stay
        /// in registers; the epilogue is done here so they are not returned through memory.
        #[inline(never)]
        #[target_feature(enable = "avx2,fma")]
        fn run<const R: usize>(&self, out: &mut [MaybeUninit<f32>]) {
            let n = self.w.n;
            let acc = sums::<R, TILE_V>(self.a, self.strips, self.v);
            for (i, sums) in acc.into_iter().enumerate() {
                let dst = &mut out[i * n + self.c0..][..BLOCK_N];
                epilogue(
                    self.w,
                    self.c0,
                    sums,
                    self.s_x[i],
                    self.min_x[i],
                    self.gelu_bias,
                    dst,
                );
            }
        }
    }

    /// The exact Σ q_x·q_w of the first `R` rows of row tile `a` against lane `v` of every
    /// K-step of `strips`: per row two registers, the lane's columns 0–7 and 8–15, one
    /// column per i32. Per K-step and row, the row's four u8 broadcast, one `vpmaddubsw`
    /// against each half of the lane (eight columns × four K values) gives i16 pairs, and a
    /// `vpmaddwd` by ones adds each column's pair. Inlined into callers that are not, so
    /// the accumulators stay in registers.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn sums<const R: usize, const L: usize>(
        a: &[[u32; TILE_M]],
        strips: &[[Lane; L]],
        v: usize,
    ) -> [[__m256i; 2]; R] {
        let ones = _mm256_set1_epi16(1);
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for (ak, wk) in a.iter().zip(strips) {
            let lane = &wk[v];
            let w0 = load_bytes(&lane[..32]);
            let w1 = load_bytes(&lane[32..]);
            for (acc_i, &q) in acc.iter_mut().zip(ak) {
                let a_i = _mm256_set1_epi32(q as i32);
                let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(a_i, w0), ones);
                let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(a_i, w1), ones);
                acc_i[0] = _mm256_add_epi32(acc_i[0], p0);
                acc_i[1] = _mm256_add_epi32(acc_i[1], p1);
            }
        }
        acc
    }

    /// `vnni::dequantize` in eight lanes: `s_w · (s_x · acc + min_x · Σ q_w)`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn dequantize(acc: __m256i, s_x: f32, min_x: f32, sw: __m256, cs: __m256) -> __m256 {
        let y = _mm256_fmadd_ps(
            _mm256_cvtepi32_ps(acc),
            _mm256_set1_ps(s_x),
            _mm256_mul_ps(cs, _mm256_set1_ps(min_x)),
        );
        _mm256_mul_ps(y, sw)
    }

    /// The low byte of each of the eight i32 lanes of `v`, in order, as two little-endian
    /// words: one `vpshufb` gathers each 128-bit half's four bytes into its low 32 bits.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn low_bytes(v: __m256i) -> [u32; 2] {
        let gather = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let b = _mm256_shuffle_epi8(v, gather);
        [
            _mm256_extract_epi32::<0>(b) as u32,
            _mm256_extract_epi32::<4>(b) as u32,
        ]
    }

    /// 32 packed weights (eight columns × four K values) in one register.
    #[inline]
    #[target_feature(enable = "avx")]
    fn load_bytes(b: &[i8]) -> __m256i {
        let b: [i8; 32] = b.try_into().expect("32 weights");
        bytemuck::cast(b)
    }

    /// `vnni::dequantize` (the same operations in the same order, so the same bits) and the
    /// GELU, eight columns at a time, into `dst` (16 columns from `c0`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn epilogue(
        w: &Int8Weights,
        c0: usize,
        sums: [__m256i; 2],
        s_x: f32,
        min_x: f32,
        gelu_bias: Option<&[f32]>,
        dst: &mut [MaybeUninit<f32>],
    ) {
        for (h, acc) in sums.into_iter().enumerate() {
            let c = c0 + h * LANES;
            let (sw, cs) = (load(&w.scale[c..c + LANES]), load(&w.col_sum[c..c + LANES]));
            let y = dequantize(acc, s_x, min_x, sw, cs);
            let y = match gelu_bias {
                Some(bias) => gelu8(_mm256_add_ps(y, load(&bias[c..c + LANES]))),
                None => y,
            };
            let y: [f32; LANES] = bytemuck::cast(y);
            for (o, v) in dst[h * LANES..][..LANES].iter_mut().zip(y) {
                o.write(v);
            }
        }
    }

    /// `vnni::gelu16` in eight lanes: the reciprocal from `vrcpps` (12 bits) and one Newton
    /// step, 2^k built in the exponent bits (k is in [−126, 0], a normal number, so the
    /// product is `vscalefps`'s), the sign by masks.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn gelu8(x: __m256) -> __m256 {
        let one = _mm256_set1_ps(1.0);
        let sign = _mm256_set1_ps(-0.0);
        let xs = _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::FRAC_1_SQRT_2));
        let a = _mm256_min_ps(_mm256_andnot_ps(sign, xs), _mm256_set1_ps(8.0));
        let d = _mm256_fmadd_ps(a, _mm256_set1_ps(0.327_591_1), one);
        let r = _mm256_rcp_ps(d);
        let t = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0)));
        let mut poly = _mm256_set1_ps(1.061_405_4);
        for c in [-1.453_152_1, 1.421_413_7, -0.284_496_74, 0.254_829_6] {
            poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(c));
        }
        poly = _mm256_mul_ps(poly, t);
        let e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), a), a));
        // 1 − poly·e is in [0, 1]: its sign bit is clear, so OR-ing in x's gives erf(x/√2).
        let y = _mm256_fnmadd_ps(poly, e, one);
        let erf = _mm256_or_ps(y, _mm256_and_ps(sign, xs));
        let half = _mm256_mul_ps(x, _mm256_set1_ps(0.5));
        _mm256_fmadd_ps(half, erf, half)
    }

    /// `vnni::exp16` in eight lanes (z ≤ 0).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp8(z: __m256) -> __m256 {
        let z = _mm256_max_ps(z, _mm256_set1_ps(-87.0));
        let k = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(z, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693_359_4), z);
        let r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.121_944_4e-4), r);
        let mut p = _mm256_set1_ps(0.001_388_888_9);
        for c in [0.008_333_334, 0.041_666_668, 0.166_666_67, 0.5, 1.0, 1.0] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let bits = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(k),
            _mm256_set1_epi32(127),
        ));
        _mm256_mul_ps(p, bytemuck::cast::<__m256i, __m256>(bits))
    }

    #[inline]
    #[target_feature(enable = "avx")]
    pub(crate) fn load(xs: &[f32]) -> __m256 {
        let a: [f32; LANES] = xs.try_into().expect("8 lanes");
        bytemuck::cast(a)
    }
}

/// The integer products on AMX tiles (see the module's doc). Linux only: it is where the
/// process must ask for the tile state, and where this has been run.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod amx {
    use std::arch::asm;
    use std::arch::x86_64::__m512i;
    use std::sync::OnceLock;

    use super::vnni::{column_block, dequantize};
    use super::{Int8Weights, Sink, BLOCK_K, BLOCK_N, TILE_V};

    /// K values in one tile row of activations, and in one tile of weights (16 rows of 4).
    pub(super) const TILE_K: usize = 64;
    /// Rows of a tile: the activations are padded to whole tiles.
    pub(super) const TILE_ROWS: usize = 16;
    /// Rows multiplied together: two tiles of activations against each tile of weights
    /// (the last block is one tile when a single one is left, so a short call pads at most
    /// 15 rows: one 37-token note multiplies 48 rows, not 64).
    const BLOCK_ROWS: usize = 2 * TILE_ROWS;
    /// Bytes of one lane of the packed weights (16 columns × 4 K values).
    const LANE_BYTES: usize = BLOCK_N * BLOCK_K;

    /// `arch_prctl` request for permission to use an extended state component, and the
    /// component of the tile registers' data (Linux's `ARCH_REQ_XCOMP_PERM`,
    /// `XFEATURE_XTILEDATA`).
    const ARCH_REQ_XCOMP_PERM: libc::c_ulong = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_ulong = 18;

    /// Whether the AMX path runs a product with `k` inputs: the CPU has AMX-INT8 and the
    /// VNNI path's features (the quantizer and the epilogue are shared), the kernel granted
    /// this process the tile state (asked once), and `k` is whole tiles.
    pub(super) fn usable(k: usize) -> bool {
        static GRANTED: OnceLock<bool> = OnceLock::new();
        k.is_multiple_of(TILE_K)
            && *GRANTED.get_or_init(|| {
                // CPUID leaf 7: EDX bit 24 is AMX-TILE, bit 25 AMX-INT8.
                let leaf = std::arch::x86_64::__cpuid_count(7, 0);
                let has = leaf.edx & (1 << 24) != 0 && leaf.edx & (1 << 25) != 0;
                has && super::vnni_supported() && {
                    #[allow(unsafe_code)]
                    // SAFETY: a plain system call with integer arguments; it changes only
                    // which state components this process may use.
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_arch_prctl,
                            ARCH_REQ_XCOMP_PERM,
                            XFEATURE_XTILEDATA,
                        )
                    };
                    r == 0
                }
            })
    }

    /// Palette 1 with tiles 0–7 all 16 rows of 64 bytes: tiles 0–3 accumulate (i32), 4–5
    /// hold activations (u8), 6–7 weights (i8, four K values per column).
    #[repr(C, align(64))]
    struct TileConfig([u8; 64]);

    impl TileConfig {
        fn full() -> TileConfig {
            let mut c = [0u8; 64];
            c[0] = 1; // palette
            for t in 0..8 {
                c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(TILE_K as u16).to_le_bytes());
                c[48 + t] = TILE_ROWS as u8;
            }
            TileConfig(c)
        }
    }

    /// Four tiles of i32 sums, stored from the tile registers for the epilogue.
    #[repr(C, align(64))]
    struct Sums([[[i32; BLOCK_N]; TILE_ROWS]; 4]);

    /// `out[m, n]` from the row-major quantized activations `a: [rows, k]` (`rows` whole
    /// tiles of [`TILE_ROWS`], those past `m` zero), with the same epilogue as the VNNI
    /// path.
    ///
    /// # Safety
    /// [`usable`]`(w.k)` returned true (the CPU has every feature used here and the process
    /// holds the tile state).
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
    pub(super) unsafe fn gemm(
        w: &Int8Weights,
        a: &[u8],
        s_x: &[f32],
        min_x: &[f32],
        out: &mut Sink,
    ) {
        let (k, n, m) = (w.k, w.n, s_x.len());
        let steps = k / BLOCK_K;
        let blocks = n / BLOCK_N;
        let rows = a.len() / k;
        // Every tile load below stays inside these: the activations' rows are whole blocks,
        // and the weights hold `TILE_V` lanes for every (column tile, K step).
        assert!(
            k.is_multiple_of(TILE_K)
                && rows.is_multiple_of(TILE_ROWS)
                && rows >= m
                && a.len() == rows * k
                && min_x.len() == m
                && out.out.len() == m * n
                && w.packed.len() == n.div_ceil(BLOCK_N * TILE_V) * steps,
            "int8 amx: shapes do not match"
        );
        let base = w.packed.as_ptr().cast::<u8>();
        // Weight tile of block `j` (16 columns) at K chunk 0: lane (j / 3, step 0, j % 3);
        // its 16 rows are the next 16 K steps, `TILE_V` lanes apart; chunks are 16 steps.
        let b_at =
            |j: usize| base.wrapping_add(((j / TILE_V) * steps * TILE_V + j % TILE_V) * LANE_BYTES);
        let (b_stride, b_chunk) = (TILE_V * LANE_BYTES, TILE_ROWS * TILE_V * LANE_BYTES);
        let chunks = k / TILE_K;
        let cfg = TileConfig::full();
        let mut sums = Sums([[[0; BLOCK_N]; TILE_ROWS]; 4]);
        let c = sums.0.as_mut_ptr().cast::<u8>();
        let c_stride = BLOCK_N * 4;
        // SAFETY (every block below): the process holds the tile state (`usable`); loads
        // read 16 rows of 64 bytes at the given stride, which the assert above keeps inside
        // `a` (rows `r0..r0 + 32`, or `r0..r0 + 16` for a last block of one tile, bytes
        // `64c..64c + 64` of each) and `w.packed` (steps
        // `16c..16c + 16` of lane `j`); stores write the four tiles of `sums`. The compiler
        // allocates no tile register, so naming them in the templates clobbers nothing of
        // its own.
        unsafe { asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly)) };
        let live = m.div_ceil(TILE_ROWS) * TILE_ROWS;
        let mut r0 = 0;
        while r0 < live {
            // One tile of rows left: tiles 2 and 3 are not computed (their rows are past
            // `m`, so the epilogue below never reads them).
            let half = live - r0 < BLOCK_ROWS;
            let a0 = a[r0 * k..].as_ptr();
            let a1 = a[(r0 + if half { 0 } else { TILE_ROWS }) * k..].as_ptr();
            for j in (0..blocks).step_by(2) {
                // An odd last block multiplies its weights twice (tiles 1 and 3 repeat 0
                // and 2, and the epilogue skips them): one kernel for both cases, and this
                // model's widths are all even numbers of blocks anyway.
                let b1 = b_at(if j + 1 < blocks { j + 1 } else { j });
                if half {
                    unsafe {
                        asm!(
                            "tilezero tmm0",
                            "tilezero tmm1",
                            "2:",
                            "tileloadd tmm4, [{a0} + {sa}*1]",
                            "tileloadd tmm6, [{b0} + {sb}*1]",
                            "tileloadd tmm7, [{b1} + {sb}*1]",
                            "tdpbusd tmm0, tmm4, tmm6",
                            "tdpbusd tmm1, tmm4, tmm7",
                            "add {a0}, {ka}",
                            "add {b0}, {kb}",
                            "add {b1}, {kb}",
                            "dec {left}",
                            "jnz 2b",
                            "tilestored [{c0} + {sc}*1], tmm0",
                            "tilestored [{c1} + {sc}*1], tmm1",
                            a0 = inout(reg) a0 => _,
                            b0 = inout(reg) b_at(j) => _,
                            b1 = inout(reg) b1 => _,
                            left = inout(reg) chunks => _,
                            sa = in(reg) k,
                            sb = in(reg) b_stride,
                            ka = const TILE_K,
                            kb = in(reg) b_chunk,
                            c0 = in(reg) c,
                            c1 = in(reg) c.wrapping_add(1024),
                            sc = in(reg) c_stride,
                            options(nostack),
                        );
                    }
                } else {
                    unsafe {
                        asm!(
                            "tilezero tmm0",
                            "tilezero tmm1",
                            "tilezero tmm2",
                            "tilezero tmm3",
                            "2:",
                            "tileloadd tmm4, [{a0} + {sa}*1]",
                            "tileloadd tmm5, [{a1} + {sa}*1]",
                            "tileloadd tmm6, [{b0} + {sb}*1]",
                            "tileloadd tmm7, [{b1} + {sb}*1]",
                            "tdpbusd tmm0, tmm4, tmm6",
                            "tdpbusd tmm1, tmm4, tmm7",
                            "tdpbusd tmm2, tmm5, tmm6",
                            "tdpbusd tmm3, tmm5, tmm7",
                            "add {a0}, {ka}",
                            "add {a1}, {ka}",
                            "add {b0}, {kb}",
                            "add {b1}, {kb}",
                            "dec {left}",
                            "jnz 2b",
                            "tilestored [{c0} + {sc}*1], tmm0",
                            "tilestored [{c1} + {sc}*1], tmm1",
                            "tilestored [{c2} + {sc}*1], tmm2",
                            "tilestored [{c3} + {sc}*1], tmm3",
                            a0 = inout(reg) a0 => _,
                            a1 = inout(reg) a1 => _,
                            b0 = inout(reg) b_at(j) => _,
                            b1 = inout(reg) b1 => _,
                            left = inout(reg) chunks => _,
                            sa = in(reg) k,
                            sb = in(reg) b_stride,
                            ka = const TILE_K,
                            kb = in(reg) b_chunk,
                            c0 = in(reg) c,
                            c1 = in(reg) c.wrapping_add(1024),
                            c2 = in(reg) c.wrapping_add(2048),
                            c3 = in(reg) c.wrapping_add(3072),
                            sc = in(reg) c_stride,
                            options(nostack),
                        );
                    }
                }
                // Tiles 0 and 2 are block j (rows 0–15, 16–31), tiles 1 and 3 block j + 1.
                for (tile, sums) in sums.0.iter().enumerate() {
                    let jj = j + tile % 2;
                    if jj >= blocks {
                        continue;
                    }
                    let c0 = jj * BLOCK_N;
                    let (sw, cs) = column_block(w, c0);
                    for (i, acc) in sums.iter().enumerate() {
                        let row = r0 + (tile / 2) * TILE_ROWS + i;
                        if row >= m {
                            break;
                        }
                        let acc: __m512i = bytemuck::cast(*acc);
                        let y = dequantize(acc, s_x[row], min_x[row], sw, cs);
                        out.put(row, c0, y);
                    }
                }
            }
            r0 += if half { TILE_ROWS } else { BLOCK_ROWS };
        }
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// `x @ Wᵀ` through [`Int8Weights`] as a candle op: `x: [.., k]` f32 → `[.., n]`; with
/// `gelu_bias`, `gelu(x @ Wᵀ + bias)` ([`Int8Weights::matmul_bias_gelu`]).
pub struct Int8Matmul<'a> {
    pub weights: &'a Int8Weights,
    pub gelu_bias: Option<&'a [f32]>,
}

impl CustomOp1 for Int8Matmul<'_> {
    fn name(&self) -> &'static str {
        "int8-matmul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let x = crate::f32_slice(s, l, self.name())?;
        let w = self.weights;
        let dims = l.shape().dims();
        if dims.last() != Some(&w.k) || self.gelu_bias.is_some_and(|b| b.len() != w.n) {
            candle_core::bail!("int8-matmul: input width or bias does not match the weight")
        }
        let mut out_dims = dims.to_vec();
        if let Some(last) = out_dims.last_mut() {
            *last = w.n;
        }
        let y = match self.gelu_bias {
            Some(bias) => w.matmul_bias_gelu(x, bias),
            None => w.matmul(x),
        };
        Ok((CpuStorage::F32(y), Shape::from(out_dims)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_equals_f32_round() {
        let mut xs: Vec<f32> = (-400..=400).map(|k| k as f32 * 0.5).collect();
        xs.extend((-20_000..20_000).map(|k| k as f32 * 0.013_7));
        xs.extend([
            0.0,
            -0.0,
            0.499_999_97,
            -0.499_999_97,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            4_194_303.5,
            8_388_607.0,
            8_388_608.0,
            -8_388_609.0,
            1e30,
            -1e30,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        for x in xs {
            assert_eq!(
                round_half_away(x).to_bits(),
                x.round().to_bits(),
                "round({x})"
            );
        }
        assert!(round_half_away(f32::NAN).is_nan());
    }

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// `w_t: [k, n]` quantized for the AVX2 path (7-bit), whatever this CPU runs.
    fn avx2_weights(w_t: &[f32], k: usize, n: usize) -> Int8Weights {
        Int8Weights::from_transpose(w_t, k, n, avx2::WEIGHT_MAX).expect("supported shape")
    }

    /// `len` values uniform in `[-scale, scale)`.
    fn random(seed: &mut u64, len: usize, scale: f32) -> Vec<f32> {
        (0..len).map(|_| lcg(seed) * scale).collect()
    }

    /// The int8 product is within quantization error of the f32 product, on every tile
    /// shape the dispatcher uses (rows 1..=17, columns 16..=112).
    #[test]
    fn int8_matmul_tracks_f32() {
        if !Int8Weights::supported() {
            eprintln!("skipped: this CPU has neither AVX-512 VNNI nor AVX2");
            return;
        }
        let mut seed = 7;
        for (m, k, n) in [
            (1, 4, 16),
            (17, 384, 112),
            (9, 64, 48),
            (8, 1536, 384),
            (3, 8, 32),
        ] {
            let w = random(&mut seed, k * n, 0.1);
            // A skewed activation (GELU-like, with an outlier column).
            let x: Vec<f32> = (0..m * k)
                .map(|i| {
                    let v = lcg(&mut seed) * 2.0;
                    if i % k == 3 {
                        v * 20.0
                    } else {
                        v.max(-0.17)
                    }
                })
                .collect();
            let q = Int8Weights::new(&w, k, n).expect("supported shape");
            let got = q.matmul(&x);
            for r in 0..m {
                let xr = &x[r * k..][..k];
                let range = xr.iter().fold(0f32, |a, &v| a.max(v.abs()));
                for c in 0..n {
                    let want: f32 = (0..k).map(|i| xr[i] * w[i * n + c]).sum();
                    let wmax = (0..k).fold(0f32, |a, i| a.max(w[i * n + c].abs()));
                    // Error bound: k half-steps of both quantizers, loosely.
                    let tol = (k as f32).sqrt() * range * wmax * 0.02 + 1e-5;
                    let g = got[r * n + c];
                    assert!(
                        (g - want).abs() <= tol,
                        "m{m} k{k} n{n} [{r},{c}]: {g} vs {want}"
                    );
                }
            }
        }
    }

    /// A row's result does not depend on the rows beside it: each row quantizes on its own
    /// and the integer sums are exact, so every row count (every height of the last tile,
    /// 1 to 8, and whole tiles beside it) gives each row the bits it gets alone, with and
    /// without the GELU.
    #[test]
    fn each_row_gets_the_bits_it_gets_alone_whatever_the_tile_height() {
        if !vnni_supported() {
            eprintln!("skipped: this CPU has no AVX-512 VNNI");
            return;
        }
        let mut seed = 13;
        let (k, n) = (64, 96);
        let w = random(&mut seed, k * n, 0.1);
        let bias = random(&mut seed, n, 1.0);
        let q = Int8Weights::new(&w, k, n).expect("supported shape");
        let x = random(&mut seed, 17 * k, 3.0);
        let alone: Vec<Vec<u32>> = x
            .chunks_exact(k)
            .map(|row| {
                let mut bits: Vec<u32> = q
                    .product_vnni(row, 1, None)
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                bits.extend(
                    q.product_vnni(row, 1, Some(&bias))
                        .iter()
                        .map(|v| v.to_bits()),
                );
                bits
            })
            .collect();
        for m in 1..=17 {
            let rows = &x[..m * k];
            let plain = q.product_vnni(rows, m, None);
            let gelu = q.product_vnni(rows, m, Some(&bias));
            for r in 0..m {
                let mut bits: Vec<u32> = plain[r * n..][..n].iter().map(|v| v.to_bits()).collect();
                bits.extend(gelu[r * n..][..n].iter().map(|v| v.to_bits()));
                assert_eq!(bits, alone[r], "m{m}, row {r}");
            }
        }
    }

    /// Where the CPU has AMX, its products are the VNNI path's bit for bit (the integer sums
    /// are exact and the epilogue is shared), on row counts that leave partial blocks and
    /// column counts with an odd number of 16-column blocks.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn amx_gives_the_vnni_path_bits() {
        if !vnni_supported() || !amx::usable(64) {
            eprintln!("skipped: this CPU or kernel has no AMX-INT8");
            return;
        }
        let mut seed = 11;
        for (m, k, n) in [
            (1, 64, 16),
            (17, 384, 112),
            (33, 1536, 384),
            (64, 384, 1152),
            (5, 128, 48),
            (40, 64, 32),
        ] {
            let w = random(&mut seed, k * n, 0.1);
            let x = random(&mut seed, m * k, 3.0);
            let q = Int8Weights::new(&w, k, n).expect("supported shape");
            let amx: Vec<u32> = q.matmul(&x).iter().map(|v| v.to_bits()).collect();
            let vnni: Vec<u32> = q
                .product_vnni(&x, m, None)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(amx, vnni, "m{m} k{k} n{n}");
        }
    }

    /// The vector GELU of `v` (16 lanes), for the tests.
    fn gelu_lanes(v: &[f32]) -> Vec<f32> {
        #[allow(unsafe_code)]
        // SAFETY: the callers run only where `vnni_supported()` (AVX-512F, FMA).
        let y = unsafe { vnni::gelu16(vnni::load(v)) };
        bytemuck::cast::<_, [f32; BLOCK_N]>(y).to_vec()
    }

    /// The fused GELU gives the bits of the product followed by the vector GELU of
    /// `v + bias`, on both paths (`k` a multiple of 64 takes AMX where there is one; `k = 8`
    /// takes VNNI).
    #[test]
    fn the_fused_gelu_is_gelu_of_the_product() {
        if !vnni_supported() {
            eprintln!("skipped: this CPU has no AVX-512 VNNI");
            return;
        }
        let mut seed = 5;
        for (m, k, n) in [(37, 384, 1536), (3, 8, 48), (33, 64, 80)] {
            let w = random(&mut seed, k * n, 0.1);
            let x = random(&mut seed, m * k, 2.0);
            let bias = random(&mut seed, n, 1.0);
            let q = Int8Weights::new(&w, k, n).expect("supported shape");
            let want: Vec<u32> = q
                .matmul(&x)
                .chunks_exact(n)
                .flat_map(|row| {
                    let biased: Vec<f32> = row.iter().zip(&bias).map(|(&v, &b)| v + b).collect();
                    biased
                        .chunks_exact(BLOCK_N)
                        .flat_map(gelu_lanes)
                        .collect::<Vec<_>>()
                })
                .map(f32::to_bits)
                .collect();
            let fused: Vec<u32> = q
                .matmul_bias_gelu(&x, &bias)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(fused, want, "m{m} k{k} n{n}");
            let vnni: Vec<u32> = q
                .product_vnni(&x, m, Some(&bias))
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(vnni, want, "m{m} k{k} n{n}, VNNI");
        }
    }

    /// The vector e^x is the scalar one (`crate::fast_exp`, which the f32 softmax runs) to
    /// within two rounding steps over [−100, 0], the range attention's softmax feeds it
    /// (x − max ≤ 0), and gives 1 at 0 exactly (the row maximum's weight is then 255).
    #[test]
    fn the_vector_exp_is_the_scalar_one() {
        if !vnni_supported() {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        }
        let mut xs: Vec<f32> = (0..=100_000).map(|i| -(i as f32) * 1e-3).collect();
        xs.extend([-0.0, f32::NEG_INFINITY, -1e30, -87.5, -86.9]);
        xs.resize(xs.len().next_multiple_of(BLOCK_N), 0.0);
        for chunk in xs.chunks_exact(BLOCK_N) {
            #[allow(unsafe_code)]
            // SAFETY: `vnni_supported()` held: the CPU has AVX-512F and FMA.
            let got: [f32; BLOCK_N] = bytemuck::cast(unsafe { vnni::exp16(vnni::load(chunk)) });
            for (&x, y) in chunk.iter().zip(got) {
                let want = crate::fast_exp(x);
                assert!(
                    (y - want).abs() <= 2.0 * f32::EPSILON * want,
                    "{x}: {y} vs {want}"
                );
            }
        }
        #[allow(unsafe_code)]
        // SAFETY: as above.
        let one: [f32; BLOCK_N] =
            bytemuck::cast(unsafe { vnni::exp16(vnni::load(&[0.0; BLOCK_N])) });
        assert!(one.iter().all(|&v| v == 1.0));
    }

    /// The vector GELU is the scalar one (`crate::gelu`, which `BiasGelu` runs on the f32
    /// path) to within 1e-6 of max(1, |x|), over a fine sweep and the edges: zeros of either
    /// sign, the clamp of e^x, large and infinite inputs.
    #[test]
    fn the_vector_gelu_is_the_scalar_one() {
        if !vnni_supported() {
            eprintln!("skipped: this CPU has no AVX-512");
            return;
        }
        let mut xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 * 1e-3).collect();
        xs.extend([
            0.0, -0.0, 13.2, -13.2, 14.0, -14.0, 100.0, -100.0, 1e30, -1e30,
        ]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, 1e-30, -1e-30]);
        xs.resize(xs.len().next_multiple_of(BLOCK_N), 0.5);
        for chunk in xs.chunks_exact(BLOCK_N) {
            for (&x, y) in chunk.iter().zip(gelu_lanes(chunk)) {
                let want = crate::gelu(x);
                if want.is_infinite() || want.is_nan() {
                    assert!(
                        y == want || (y.is_nan() && want.is_nan()),
                        "{x}: {y} vs {want}"
                    );
                    continue;
                }
                assert!(
                    (y - want).abs() <= 1e-6 * x.abs().max(1.0),
                    "{x}: {y} vs {want}"
                );
            }
        }
    }

    /// The AVX2 path's product, computed by hand: each row quantized to u8 over its range
    /// (0 included) with one fused multiply-add, exact integer sums against the packed
    /// weights, the epilogue's fused multiply-add and product. Bit for bit, on every tile
    /// height (1 to 4 rows, blocks of 16), an odd number of 16-column blocks, and the
    /// extremes `vpmaddubsw` could saturate on (every activation 255, every weight ±63).
    #[test]
    fn the_avx2_path_is_the_integer_arithmetic_bit_for_bit() {
        if !avx2_supported() {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        }
        let mut seed = 17;
        let cases = [
            (1, 4, 16),
            (2, 8, 48),
            (7, 64, 16),
            (26, 384, 112),
            (49, 1536, 32),
            (3, 384, 48),
            (5, 1536, 48),
        ];
        for (case, (m, k, n)) in cases.into_iter().enumerate() {
            let mut w = random(&mut seed, k * n, 0.1);
            let mut x = random(&mut seed, m * k, 3.0);
            x[0] = 40.0; // an outlier: the first row's range is skewed
            if case == 5 {
                // Every activation quantizes to 255 and every weight to +63: the largest
                // positive pair sums.
                x.fill(1.0);
                w.fill(0.1);
            }
            if case == 6 {
                // Activations 0 or 255 and weights ±63 alternating by column and K.
                for (i, v) in x.iter_mut().enumerate() {
                    *v = if i % 3 == 0 { 0.0 } else { 2.0 };
                }
                for (i, v) in w.iter_mut().enumerate() {
                    *v = if (i / n + i % n) % 2 == 0 { 0.1 } else { -0.1 };
                }
            }
            let q = avx2_weights(&w, k, n);
            let got: Vec<u32> = q
                .product_avx2(&x, m, None)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            let mut want = Vec::with_capacity(m * n);
            for xr in x.chunks_exact(k) {
                let l = xr.iter().fold(0f32, |a, &v| a.min(v));
                let h = xr.iter().fold(0f32, |a, &v| a.max(v));
                let step = (h - l) / 255.0;
                let inv = 1.0 / step;
                let qx: Vec<i32> = xr
                    .iter()
                    .map(|&v| (v - l).mul_add(inv, 0.5).min(255.0) as i32)
                    .collect();
                for col in 0..n {
                    let (t, v, c) = (
                        col / (BLOCK_N * TILE_V),
                        (col / BLOCK_N) % TILE_V,
                        col % BLOCK_N,
                    );
                    let acc: i32 = (0..k)
                        .map(|row| {
                            let lane = &q.packed[t * (k / BLOCK_K) + row / BLOCK_K][v];
                            qx[row] * i32::from(lane[c * BLOCK_K + row % BLOCK_K])
                        })
                        .sum();
                    let y = (acc as f32).mul_add(step, q.col_sum[col] * l) * q.scale[col];
                    want.push(y.to_bits());
                }
            }
            assert_eq!(got, want, "m{m} k{k} n{n}");
        }
    }

    /// Where the CPU has both, the AVX2 path gives the VNNI path's bits (the GELU aside,
    /// whose reciprocal differs: see the next test).
    #[test]
    fn the_avx2_path_gives_the_vnni_bits() {
        if !vnni_supported() {
            eprintln!("skipped: this CPU has no AVX-512 VNNI");
            return;
        }
        let mut seed = 19;
        for (m, k, n) in [(1, 4, 16), (17, 384, 112), (33, 1536, 384)] {
            let w = random(&mut seed, k * n, 0.1);
            let x = random(&mut seed, m * k, 3.0);
            // The AVX2 path's 7-bit weights: the VNNI path's integer sums take them too.
            let q = avx2_weights(&w, k, n);
            let bits = |v: Vec<f32>| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(q.product_avx2(&x, m, None)),
                bits(q.product_vnni(&x, m, None)),
                "m{m} k{k} n{n}"
            );
        }
    }

    /// The AVX2 path's fused GELU is the scalar GELU of the product plus the bias to within
    /// 1e-6 of max(1, |x|) (as the VNNI path's), over a sweep of inputs and the edges.
    #[test]
    fn the_avx2_gelu_is_the_scalar_one() {
        if !avx2_supported() {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        }
        let mut xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 * 1e-3).collect();
        xs.extend([
            0.0, -0.0, 13.2, -13.2, 100.0, -100.0, 1e30, -1e30, 1e-30, -1e-30,
        ]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY]);
        xs.resize(xs.len().next_multiple_of(8), 0.5);
        for chunk in xs.chunks_exact(8) {
            let v: [f32; 8] = chunk.try_into().expect("8");
            #[allow(unsafe_code)]
            // SAFETY: `avx2_supported()` held: the CPU has AVX2 and FMA.
            let y: [f32; 8] = bytemuck::cast(unsafe { avx2::gelu8(bytemuck::cast(v)) });
            for (&x, y) in chunk.iter().zip(y) {
                let want = crate::gelu(x);
                if want.is_infinite() || want.is_nan() {
                    assert!(
                        y == want || (y.is_nan() && want.is_nan()),
                        "{x}: {y} vs {want}"
                    );
                    continue;
                }
                assert!(
                    (y - want).abs() <= 1e-6 * x.abs().max(1.0),
                    "{x}: {y} vs {want}"
                );
            }
        }
        // And through the product: the fused GELU is gelu8 of the plain product + bias.
        let mut seed = 23;
        let (m, k, n) = (7, 384, 48);
        let w = random(&mut seed, k * n, 0.1);
        let x = random(&mut seed, m * k, 2.0);
        let bias = random(&mut seed, n, 1.0);
        let q = avx2_weights(&w, k, n);
        let plain = q.product_avx2(&x, m, None);
        let fused = q.product_avx2(&x, m, Some(&bias));
        for (r, (p, f)) in plain.chunks_exact(n).zip(fused.chunks_exact(n)).enumerate() {
            for c in 0..n {
                let want = crate::gelu(p[c] + bias[c]);
                assert!(
                    (f[c] - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "[{r},{c}]"
                );
            }
        }
    }

    /// A checkpoint's `W: [n, k]` gives the weights its transpose gives, bit for bit.
    #[test]
    fn weights_from_rows_are_the_weights_from_the_transpose() {
        if !Int8Weights::supported() {
            return;
        }
        let mut seed = 11;
        for (k, n) in [(4, 16), (8, 80), (384, 1152), (1536, 384)] {
            let w = random(&mut seed, n * k, 0.1);
            let w_t: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
            let (a, b) = (
                Int8Weights::from_rows(&w, n, k).expect("shape"),
                Int8Weights::new(&w_t, k, n).expect("shape"),
            );
            assert_eq!((a.k, a.n), (b.k, b.n));
            assert!(a.packed == b.packed, "{k}x{n}: packed weights differ");
            assert_eq!(a.scale, b.scale);
            assert_eq!(a.col_sum, b.col_sum);
        }
        assert!(Int8Weights::from_rows(&[0.0; 16 * 8], 16, 4).is_none());
    }

    /// The packed layout, scales and column sums are what their element-wise definition
    /// says: weight `(row, col)` quantized with its column's scale sits in tile
    /// `col / (16·3)`, step `row / 4`, lane `(col / 16) % 3`, at `(col % 16)·4 + row % 4`.
    #[test]
    fn packed_weights_follow_the_layout_element_by_element() {
        if !Int8Weights::supported() {
            return;
        }
        let mut seed = 5;
        for (k, n) in [(4, 16), (8, 80), (384, 1152)] {
            let w = random(&mut seed, n * k, 0.1);
            let got = Int8Weights::from_rows(&w, n, k).expect("shape");
            let max = Int8Weights::weight_max();
            let steps = k / BLOCK_K;
            for col in 0..n {
                let column = &w[col * k..(col + 1) * k];
                let scale = column.iter().fold(0f32, |m, v| m.max(v.abs())) / max;
                assert_eq!(got.scale[col], scale, "{k}x{n} scale {col}");
                let mut sum = 0f32;
                for (row, v) in column.iter().enumerate() {
                    let q = (v * (1.0 / scale)).round().clamp(-max, max) as i8;
                    let (t, lane, c) = (
                        col / (BLOCK_N * TILE_V),
                        (col / BLOCK_N) % TILE_V,
                        col % BLOCK_N,
                    );
                    let at =
                        got.packed[t * steps + row / BLOCK_K][lane][c * BLOCK_K + row % BLOCK_K];
                    assert_eq!(at, q, "{k}x{n} ({row},{col})");
                    sum += f32::from(at);
                }
                assert_eq!(got.col_sum[col], sum, "{k}x{n} sum {col}");
            }
            assert!(got.scale[n..]
                .iter()
                .chain(&got.col_sum[n..])
                .all(|&v| v == 0.0));
        }
    }

    #[test]
    fn unsupported_shapes_stay_f32() {
        assert!(Int8Weights::new(&[0.0; 6 * 16], 6, 16).is_none());
        assert!(Int8Weights::new(&[0.0; 8 * 10], 8, 10).is_none());
        assert!(Int8Weights::new(&[], 0, 16).is_none());
    }

    #[test]
    fn zero_rows_and_weights_give_zero() {
        if !Int8Weights::supported() {
            return;
        }
        let q = Int8Weights::new(&[0.0; 8 * 16], 8, 16).expect("shape");
        assert!(q.matmul(&[0.0; 2 * 8]).iter().all(|&v| v == 0.0));
    }
}
