//! phiguard's CPU kernels for the encoder, as candle custom ops: the fused element-wise
//! kernels here (bias+GELU, bias+residual+LayerNorm, mask+softmax), self-attention over
//! packed sequences ([`attention`], its products in int8 beside int8 dense layers) and the
//! int8 dense layers of [`int8`] (AVX-512 VNNI, AMX).
//!
//! A crate of its own so that debug builds compile it optimised (the workspace's
//! `[profile.dev.package.phiguard-kernels]`): the rest of phiguard stays quick to build,
//! while a debug server still runs the model at close to release speed.
//!
//! # Why
//! Unfused, each of these is three to seven candle ops, each a full pass over a fresh
//! tensor, and candle's GELU and softmax call scalar `erf` / `exp` (measured ≈ 9 % and
//! ≈ 7 % of a BERT forward). Here each is one pass with polynomial `exp` / `erf` that the
//! compiler vectorizes. They run single-threaded on purpose: parallelism comes from the
//! worker threads (see `phiguard::inference`). Only the CPU has these kernels; on Metal and
//! CUDA the model uses the composite candle ops instead.
//!
//! Accuracy: `exp` has a relative error below 2e-7 and `erf` an absolute error below
//! 1e-6 in f32 (Abramowitz & Stegun 7.1.26), far inside the 1e-4 logit tolerance of the
//! parity tests.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Shape};

pub mod attention;
pub mod int8;
pub use attention::PackedAttention;
pub use int8::{Int8Matmul, Int8Weights};

type CResult<T> = candle_core::Result<T>;

fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, op: &'static str) -> CResult<&'a [f32]> {
    let CpuStorage::F32(data) = s else {
        candle_core::bail!("{op}: expected f32 input")
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => Err(candle_core::Error::RequiresContiguous { op }),
    }
}

/// 1.5 * 2^23: adding it rounds to an integer.
const EXP_SHIFTER: f32 = 12_582_912.0;

/// The reduction and polynomial of [`fast_exp`]: `shifted` holds k = round(x / ln 2) in its
/// low mantissa bits (its bit pattern is [`EXP_SHIFTER`]'s plus k, |k| ≤ 127 ≪ 2^22), and
/// p ≈ e^(x − k ln 2); e^x = p · 2^k.
#[inline(always)]
fn exp_parts(x: f32) -> (f32, f32, f32) {
    let x = x.clamp(-87.0, 88.0);
    let shifted = x.mul_add(std::f32::consts::LOG2_E, EXP_SHIFTER);
    let k = shifted - EXP_SHIFTER;
    // Cephes' two-part ln 2 keeps the reduction exact.
    let r = k.mul_add(2.121_944_4e-4, k.mul_add(-0.693_359_4, x));
    // Fused multiply-adds (Horner): one instruction a step inside the SIMD kernels, which
    // are compiled with FMA (on a CPU without it, `mul_add` is a library call: correct,
    // slower, and no kernel here runs there without the scalar fallback anyway).
    let p = 0.001_388_888_9f32
        .mul_add(r, 0.008_333_334)
        .mul_add(r, 0.041_666_668)
        .mul_add(r, 0.166_666_67)
        .mul_add(r, 0.5)
        .mul_add(r, 1.0)
        .mul_add(r, 1.0);
    (shifted, k, p)
}

/// e^x with a relative error below 2e-7 for x in [-87, 88]; clamps outside.
#[inline(always)]
pub fn fast_exp(x: f32) -> f32 {
    let (shifted, _, p) = exp_parts(x);
    // 2^k as the exponent field k + 127, taken from `shifted`'s bits with integer
    // arithmetic. Not `k as i32`: Rust's float-to-int cast saturates and maps NaN to 0,
    // which LLVM cannot vectorize, so every caller's loop (GELU, softmax) ran it one lane at
    // a time. The two give the same bits for every x (k + 127 lies in 1..=254).
    let bits = shifted
        .to_bits()
        .wrapping_sub(EXP_SHIFTER.to_bits())
        .wrapping_add(127)
        << 23;
    p * f32::from_bits(bits)
}

/// erf(x) with an absolute error below 1e-6 in f32 (Abramowitz & Stegun 7.1.26).
#[inline(always)]
pub fn fast_erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * fast_exp(-a * a);
    y.copysign(x)
}

/// GELU, the erf form: `x/2 · (1 + erf(x/√2))`, for [`BiasGelu`] (the f32 path). The int8
/// product's fused epilogue runs the same formula written in AVX-512 registers
/// (`int8::vnni::gelu16`): within 5e-7 of this one on [-12, 12], a rounding step or two (tested
/// there), not the same bits.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + fast_erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `gelu(x + bias)` (the erf form), `x: [.., n]`, `bias: [n]`.
pub struct BiasGelu<'a> {
    pub bias: &'a [f32],
}

impl CustomOp1 for BiasGelu<'_> {
    fn name(&self) -> &'static str {
        "bias-gelu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let x = f32_slice(s, l, self.name())?;
        let n = self.bias.len();
        if n == 0 || !x.len().is_multiple_of(n) {
            candle_core::bail!("bias-gelu: bias does not match the last dimension")
        }
        let mut out = vec![0f32; x.len()];
        pulp::Arch::new().dispatch(GeluKernel {
            x,
            bias: self.bias,
            out: &mut out,
        });
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }
}

/// The loop of [`BiasGelu`] as a `pulp` kernel: `with_simd` is inlined into a function
/// compiled for the best instruction set the CPU has (AVX-512 or AVX2 on x86-64), so the
/// polynomial `erf` is vectorized while the binary stays portable.
struct GeluKernel<'a> {
    x: &'a [f32],
    bias: &'a [f32],
    out: &'a mut [f32],
}

impl pulp::WithSimd for GeluKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let n = self.bias.len();
        for (o_row, x_row) in self.out.chunks_exact_mut(n).zip(self.x.chunks_exact(n)) {
            for ((o, &v), &b) in o_row.iter_mut().zip(x_row).zip(self.bias) {
                *o = gelu(v + b);
            }
        }
    }
}

/// `LayerNorm(x + bias + residual) * gamma + beta` over the last dimension.
pub struct BiasResidualLayerNorm<'a> {
    pub bias: &'a [f32],
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
    pub eps: f32,
}

impl CustomOp2 for BiasResidualLayerNorm<'_> {
    fn name(&self) -> &'static str {
        "bias-residual-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, self.name())?;
        let res = f32_slice(s2, l2, self.name())?;
        let n = self.gamma.len();
        if n == 0 || x.len() != res.len() || !x.len().is_multiple_of(n) || self.bias.len() != n {
            candle_core::bail!("bias-residual-layer-norm: shapes do not match")
        }
        let mut out = vec![0f32; x.len()];
        pulp::Arch::new().dispatch(LayerNormKernel {
            op: self,
            x,
            res,
            out: &mut out,
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// The loop of [`BiasResidualLayerNorm`] as a `pulp` kernel (see [`GeluKernel`]).
struct LayerNormKernel<'a, 'b> {
    op: &'a BiasResidualLayerNorm<'b>,
    x: &'a [f32],
    res: &'a [f32],
    out: &'a mut [f32],
}

impl pulp::WithSimd for LayerNormKernel<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let op = self.op;
        let n = op.gamma.len();
        let inv_n = 1.0 / n as f32;
        for ((o, xr), rr) in self
            .out
            .chunks_exact_mut(n)
            .zip(self.x.chunks_exact(n))
            .zip(self.res.chunks_exact(n))
        {
            for (((o, &a), &b), &c) in o.iter_mut().zip(xr).zip(op.bias).zip(rr) {
                *o = a + b + c;
            }
            let mean = lane_sum(o, |v| v) * inv_n;
            o.iter_mut().for_each(|v| *v -= mean);
            let var = lane_sum(o, |v| v * v) * inv_n;
            let scale = 1.0 / (var + op.eps).sqrt();
            for ((v, &g), &b) in o.iter_mut().zip(op.gamma).zip(op.beta) {
                *v = *v * scale * g + b;
            }
        }
    }
}

/// `softmax(scores + mask)` over the last dimension; `scores: [b, h, q, k]`, the
/// additive `mask: [b, k]` (0 for tokens, a large negative number for padding).
pub struct MaskedSoftmax;

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let scores = f32_slice(s1, l1, self.name())?;
        let mask = f32_slice(s2, l2, self.name())?;
        let (b, h, q, k) = l1.shape().dims4()?;
        if mask.len() != b * k {
            candle_core::bail!("masked-softmax: mask does not match the scores")
        }
        let mut out = vec![0f32; scores.len()];
        pulp::Arch::new().dispatch(SoftmaxKernel {
            scores,
            mask,
            out: &mut out,
            k,
            rows_per_batch: h * q,
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// Lane count of the hand-split reductions below: maxima and sums are accumulated in this
/// many independent lanes so the compiler can keep them in vector registers (a plain `f32`
/// fold is a serial dependency it may not reorder).
const LANES: usize = 16;

#[inline(always)]
pub(crate) fn lane_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            // A compare and select, one `vmaxps`: `f32::max`'s NaN rule costs two more
            // instructions a lane, and a NaN score makes the row NaN through `exp` anyway.
            *a = if v > *a { v } else { *a };
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    acc.iter().fold(tail, |m, &v| m.max(v))
}

/// `Σ f(xs[i])`, accumulated in [`LANES`] lanes.
#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v);
        }
    }
    acc.iter().sum::<f32>() + chunks.remainder().iter().map(|&v| f(v)).sum::<f32>()
}

/// `xs[i] = exp(xs[i] - max)`; returns the sum.
#[inline(always)]
fn exp_sum(xs: &mut [f32], max: f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = xs.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c.iter_mut()) {
            *v = fast_exp(*v - max);
            *a += *v;
        }
    }
    let mut tail = 0f32;
    for v in chunks.into_remainder() {
        *v = fast_exp(*v - max);
        tail += *v;
    }
    acc.iter().sum::<f32>() + tail
}

/// The loop of [`MaskedSoftmax`] as a `pulp` kernel (see [`GeluKernel`]).
struct SoftmaxKernel<'a> {
    scores: &'a [f32],
    mask: &'a [f32],
    out: &'a mut [f32],
    k: usize,
    rows_per_batch: usize,
}

impl pulp::WithSimd for SoftmaxKernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let k = self.k;
        for (row_idx, (o, s)) in self
            .out
            .chunks_exact_mut(k)
            .zip(self.scores.chunks_exact(k))
            .enumerate()
        {
            let m = &self.mask[(row_idx / self.rows_per_batch) * k..][..k];
            for ((o, &s), &m) in o.iter_mut().zip(s).zip(m) {
                *o = s + m;
            }
            let max = lane_max(o);
            let inv = 1.0 / exp_sum(o, max);
            o.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor, D};

    fn max_diff(a: &Tensor, b: &Tensor) -> candle_core::Result<f32> {
        (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
    }

    /// The exponent taken from the shifter's bits equals the float-to-int cast it replaced,
    /// bit for bit, over the whole clamped range and beyond it.
    #[test]
    fn exp_scale_bits_match_the_cast() {
        fn by_cast(x: f32) -> f32 {
            let (_, k, p) = exp_parts(x);
            p * f32::from_bits(((k as i32 + 127) as u32) << 23)
        }
        let mut x = -100.0f32;
        while x < 100.0 {
            assert_eq!(fast_exp(x).to_bits(), by_cast(x).to_bits(), "exp({x})");
            x += 0.000_977;
        }
        for x in [
            -87.0f32,
            88.0,
            -86.99,
            87.99,
            0.0,
            -0.0,
            f32::MIN,
            f32::MAX,
            -1e30,
            1e30,
        ] {
            assert_eq!(fast_exp(x).to_bits(), by_cast(x).to_bits(), "exp({x})");
        }
        assert!(fast_exp(f32::NAN).is_nan());
    }

    #[test]
    fn exp_and_erf_are_accurate() {
        let mut x = -30.0f32;
        while x < 30.0 {
            let e = fast_exp(x);
            let want = x.exp();
            assert!(
                ((e - want) / want).abs() < 3e-7,
                "exp({x}) = {e}, want {want}"
            );
            x += 0.0137;
        }
        assert_eq!(fast_exp(-1e30), fast_exp(-87.0));
        let mut x = -3.0f64;
        while x < 3.0 {
            let want = series_erf(x);
            assert!(
                (f64::from(fast_erf(x as f32)) - want).abs() < 1e-6,
                "erf({x})"
            );
            x += 0.001;
        }
        // Beyond 3 the series cancels badly; known values instead.
        for (x, want) in [
            (3.5f32, 0.999_999_256_901_628f64),
            (4.0, 0.999_999_984_582_742),
            (6.0, 1.0),
        ] {
            assert!((f64::from(fast_erf(x)) - want).abs() < 1e-6, "erf({x})");
            assert!((f64::from(fast_erf(-x)) + want).abs() < 1e-6, "erf(-{x})");
        }
    }

    /// erf by its Maclaurin series in f64 (accurate to ~1e-12 for |x| <= 3).
    fn series_erf(x: f64) -> f64 {
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs().max(1e-300) {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn fused_ops_match_candle_composites() -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn(0f32, 2.0, (3, 5, 16), &dev)?;
        let r = Tensor::randn(0f32, 1.0, (3, 5, 16), &dev)?;
        let bias = Tensor::randn(0f32, 1.0, 16, &dev)?;
        let gamma = Tensor::randn(1f32, 0.1, 16, &dev)?;
        let beta = Tensor::randn(0f32, 0.1, 16, &dev)?;
        let (bv, gv, betav) = (
            bias.to_vec1::<f32>()?,
            gamma.to_vec1::<f32>()?,
            beta.to_vec1::<f32>()?,
        );

        let fused = x.apply_op1_no_bwd(&BiasGelu { bias: &bv })?;
        let want = x.broadcast_add(&bias)?.gelu_erf()?;
        assert!(max_diff(&fused, &want)? < 1e-5);

        let op = BiasResidualLayerNorm {
            bias: &bv,
            gamma: &gv,
            beta: &betav,
            eps: 1e-12,
        };
        let fused = x.apply_op2_no_bwd(&r, &op)?;
        let v = (x.broadcast_add(&bias)? + &r)?;
        let want = candle_nn::ops::layer_norm(&v, &gamma, &beta, 1e-12)?;
        assert!(max_diff(&fused, &want)? < 1e-4);

        let scores = Tensor::randn(0f32, 3.0, (2, 3, 4, 6), &dev)?;
        let mask = Tensor::new(
            &[
                [0f32, 0., 0., 0., f32::MIN, f32::MIN],
                [0., 0., 0., 0., 0., 0.],
            ],
            &dev,
        )?;
        let fused = scores.apply_op2_no_bwd(&mask, &MaskedSoftmax)?;
        let masked = scores.broadcast_add(&mask.unsqueeze(1)?.unsqueeze(1)?)?;
        let want = candle_nn::ops::softmax(&masked, D::Minus1)?;
        assert!(max_diff(&fused, &want)? < 1e-6);
        Ok(())
    }
}
