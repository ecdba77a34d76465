//! [`PackedAttention`]: multi-head self-attention over sequences packed end to end, in one
//! pass per head, with nothing computed for padding because there is none.
//!
//! # Why
//! The composite form (bias add, a permute copy of Q/K/V, `QKᵀ` as a batched matmul over
//! `[b, heads, s, s]`, a masked softmax, `·V`, a transpose copy back) pads every sequence to
//! the longest of its batch and materialises the whole score tensor: at 8 windows of 512
//! tokens that is 100 MB per layer, and short windows pay the long one's quadratic cost.
//! Here the encoder's tokens stay packed (`[tokens, 3h]`, sequence lengths beside them):
//! each (sequence, head) gathers its Q/K/V slices with the bias added, computes its scores
//! against the sequence's own keys only (`len × len`, at most 1 MB, reused), softmaxes them
//! and multiplies by V straight into the context's `[tokens, h]` rows. f32 throughout; the
//! two products go to `gemm` (the crate candle's CPU matmul uses, with its AVX-512 kernels)
//! called on the scratch buffers and the output with explicit strides, single-threaded like
//! the other kernels. (Hand-written register-blocked loops measured 2–3× slower here.)

use candle_core::{CpuStorage, CustomOp1, Layout, Shape};

use super::{exp_sum, f32_slice, lane_max, CResult};

/// Self-attention over packed sequences. Input: the fused QKV projection without its bias,
/// `[tokens, 3h]` (Q, then K, then V, each head's `h / heads` columns in order; the
/// 1/√d scale already folded into Q). Output: the attention context `[tokens, h]`.
pub struct PackedAttention<'a> {
    /// The QKV bias, `[3h]`.
    pub bias: &'a [f32],
    /// Tokens of each packed sequence, in order; they sum to the input's rows.
    pub lens: &'a [usize],
    /// Attention heads.
    pub heads: usize,
}

impl CustomOp1 for PackedAttention<'_> {
    fn name(&self) -> &'static str {
        "packed-attention"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> CResult<(CpuStorage, Shape)> {
        let x = f32_slice(s, l, self.name())?;
        let (tokens, width) = l.shape().dims2()?;
        let h = width / 3;
        if width != 3 * h
            || self.heads == 0
            || !h.is_multiple_of(self.heads)
            || self.bias.len() != width
            || self.lens.iter().sum::<usize>() != tokens
        {
            candle_core::bail!("packed-attention: shapes do not match")
        }
        let mut out = vec![0f32; tokens * h];
        pulp::Arch::new().dispatch(AttentionKernel {
            op: self,
            x,
            out: &mut out,
            h,
        });
        Ok((CpuStorage::F32(out), Shape::from((tokens, h))))
    }
}

struct AttentionKernel<'a, 'b> {
    op: &'a PackedAttention<'b>,
    x: &'a [f32],
    out: &'a mut [f32],
    h: usize,
}

impl pulp::WithSimd for AttentionKernel<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (h, heads) = (self.h, self.op.heads);
        let d = h / heads;
        let width = 3 * h;
        let longest = self.op.lens.iter().copied().max().unwrap_or(0);
        // Scratch for one (sequence, head), reused: Q, K and V rows with their bias, and
        // the scores.
        let mut q = vec![0f32; longest * d];
        let mut k = vec![0f32; longest * d];
        let mut v = vec![0f32; longest * d];
        let mut scores = vec![0f32; longest * longest];
        // 1 / Σ exp of each score row: applied to the context's `d` columns after `· V`
        // rather than to the row's `len` probabilities before it.
        let mut inv_sums = vec![0f32; longest];
        let mut start = 0;
        for &n in self.op.lens {
            if n == 0 {
                continue;
            }
            for head in 0..heads {
                let (qc, kc, vc) = (head * d, h + head * d, 2 * h + head * d);
                // Slices zipped rather than indexed: without bounds checks in the loop it
                // vectorizes (at 37 tokens these copies cost as much as the softmax).
                let bias = self.op.bias;
                for i in 0..n {
                    let row = &self.x[(start + i) * width..][..width];
                    for (dst, col) in [(&mut q, qc), (&mut k, kc), (&mut v, vc)] {
                        let (dst, src, b) =
                            (&mut dst[i * d..][..d], &row[col..][..d], &bias[col..][..d]);
                        for ((o, &x), &b) in dst.iter_mut().zip(src).zip(b) {
                            *o = x + b;
                        }
                    }
                }
                let s = &mut scores[..n * n];
                // S = Q · Kᵀ: [n, d] × [d, n] (Kᵀ read from K's rows by strides).
                matmul(
                    s,
                    (n, n, d),
                    Strided {
                        data: &q,
                        row: d,
                        col: 1,
                    },
                    Strided {
                        data: &k,
                        row: 1,
                        col: d,
                    },
                    n,
                );
                for (row, inv) in s.chunks_exact_mut(n).zip(&mut inv_sums) {
                    let max = lane_max(row);
                    *inv = 1.0 / exp_sum(row, max);
                }
                // Context = E · V: [n, n] × [n, d] (E the unnormalised exponentials), into this
                // head's columns of the output, then each row times its 1 / Σ.
                let out = &mut self.out[start * h + head * d..][..(n - 1) * h + d];
                matmul(
                    out,
                    (n, d, n),
                    Strided {
                        data: s,
                        row: n,
                        col: 1,
                    },
                    Strided {
                        data: &v,
                        row: d,
                        col: 1,
                    },
                    h,
                );
                for (i, &inv) in inv_sums[..n].iter().enumerate() {
                    for o in &mut out[i * h..][..d] {
                        *o *= inv;
                    }
                }
            }
            start += n;
        }
    }
}

/// A read-only matrix in a slice with its row and column strides (in elements).
struct Strided<'a> {
    data: &'a [f32],
    row: usize,
    col: usize,
}

impl Strided<'_> {
    /// Whether an `rows × cols` matrix at these strides lies inside the slice.
    fn holds(&self, rows: usize, cols: usize) -> bool {
        rows == 0 || cols == 0 || (rows - 1) * self.row + (cols - 1) * self.col < self.data.len()
    }
}

/// `dst = lhs · rhs` for `(m, n, k)`: `lhs` is `m × k`, `rhs` is `k × n`, `dst` is `m × n`
/// with row stride `dst_row` and unit column stride. Single-threaded.
#[allow(unsafe_code)]
fn matmul(
    dst: &mut [f32],
    (m, n, k): (usize, usize, usize),
    lhs: Strided,
    rhs: Strided,
    dst_row: usize,
) {
    let fits = lhs.holds(m, k)
        && rhs.holds(k, n)
        && (m == 0 || n == 0 || (m - 1) * dst_row + n <= dst.len());
    assert!(fits, "packed-attention: a product does not fit its buffers");
    // SAFETY: the assert above keeps every element gemm reads or writes inside the three
    // slices; `dst` is exclusively borrowed and does not overlap the shared inputs.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_row as isize,
            false,
            lhs.data.as_ptr(),
            lhs.col as isize,
            lhs.row as isize,
            rhs.data.as_ptr(),
            rhs.col as isize,
            rhs.row as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor, D};

    /// The composite form, one sequence at a time: bias, split heads, softmax(QKᵀ)·V.
    fn reference(qkv: &Tensor, bias: &Tensor, lens: &[usize], heads: usize) -> CResult<Tensor> {
        let x = qkv.broadcast_add(bias)?;
        let h = x.dim(1)? / 3;
        let d = h / heads;
        let mut parts = Vec::new();
        let mut start = 0;
        for &n in lens {
            let seq = x.narrow(0, start, n)?.reshape((n, 3, heads, d))?;
            let q = seq
                .narrow(1, 0, 1)?
                .squeeze(1)?
                .transpose(0, 1)?
                .contiguous()?;
            let k = seq
                .narrow(1, 1, 1)?
                .squeeze(1)?
                .transpose(0, 1)?
                .contiguous()?;
            let v = seq
                .narrow(1, 2, 1)?
                .squeeze(1)?
                .transpose(0, 1)?
                .contiguous()?;
            let probs = candle_nn::ops::softmax(&q.matmul(&k.t()?)?, D::Minus1)?;
            parts.push(probs.matmul(&v)?.transpose(0, 1)?.reshape((n, h))?);
            start += n;
        }
        Tensor::cat(&parts, 0)
    }

    #[test]
    fn packed_attention_matches_the_composite_per_sequence() -> CResult<()> {
        let dev = Device::Cpu;
        // A single token, lengths around vector widths (16), 12 heads of 32 as in BERT.
        for (heads, d, lens) in [
            (4usize, 8usize, vec![1usize, 5, 16, 17, 3]),
            (2, 32, vec![33, 4]),
            (12, 32, vec![70]),
        ] {
            let h = heads * d;
            let tokens: usize = lens.iter().sum();
            let qkv = Tensor::randn(0f32, 1.0, (tokens, 3 * h), &dev)?;
            let bias = Tensor::randn(0f32, 0.5, 3 * h, &dev)?;
            let bias_host = bias.to_vec1::<f32>()?;
            let op = PackedAttention {
                bias: &bias_host,
                lens: &lens,
                heads,
            };
            let got = qkv.apply_op1_no_bwd(&op)?;
            let want = reference(&qkv, &bias, &lens, heads)?;
            let diff = (got - want)?
                .abs()?
                .flatten_all()?
                .max(0)?
                .to_scalar::<f32>()?;
            assert!(diff < 1e-5, "heads {heads}, d {d}, lens {lens:?}: {diff}");
        }
        Ok(())
    }

    #[test]
    fn lengths_that_do_not_cover_the_rows_are_refused() -> CResult<()> {
        let dev = Device::Cpu;
        let qkv = Tensor::zeros((5, 24), candle_core::DType::F32, &dev)?;
        let bias = vec![0f32; 24];
        let op = PackedAttention {
            bias: &bias,
            lens: &[2, 2],
            heads: 2,
        };
        assert!(qkv.apply_op1_no_bwd(&op).is_err());
        Ok(())
    }
}
