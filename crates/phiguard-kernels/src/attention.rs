//! [`PackedAttention`]: multi-head self-attention over sequences packed end to end, in one
//! pass per head, with nothing computed for padding because there is none.
//!
//! # Why
//! The composite form (bias add, a permute copy of Q/K/V, `QKᵀ` as a batched matmul over
//! `[b, heads, s, s]`, a masked softmax, `·V`, a transpose copy back) pads every sequence to
//! the longest of its batch and materialises the whole score tensor: at 8 windows of 512
//! tokens that is 100 MB per layer, and short windows pay the long one's quadratic cost.
//! Here the encoder's tokens stay packed (`[tokens, 3h]`, sequence lengths beside them):
//! each (sequence, head) gathers its Q/K/V slices with the bias added, computes four query
//! rows' scores against the sequence's own keys only, softmaxes them and multiplies by V
//! while they are in L1, and writes the context straight into `[tokens, h]`. Scratch is
//! `O(len · head_dim)` per head. f32 throughout (scores accumulate in f32); the products are
//! register-blocked loops that `pulp` compiles for the CPU's widest vectors.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape};

use super::{exp_sum, f32_slice, lane_max, CResult};

/// Query rows per block: their scores share each key column's loads.
const ROWS: usize = 4;
/// Keys per score chunk (one AVX-512 vector).
const KEYS: usize = 16;

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
        let keys_padded = longest.div_ceil(KEYS) * KEYS;
        let rows_padded = longest.div_ceil(ROWS) * ROWS;
        // Scratch for one (sequence, head), reused: Q rows, Kᵀ (keys contiguous per
        // dimension), V rows, and one block's scores.
        let mut q = vec![0f32; rows_padded * d];
        let mut kt = vec![0f32; d * keys_padded];
        let mut v = vec![0f32; longest * d];
        let mut p = vec![0f32; ROWS * keys_padded];
        let mut o = vec![0f32; ROWS * d];
        let mut start = 0;
        for &n in self.op.lens {
            let kp = n.div_ceil(KEYS) * KEYS;
            for head in 0..heads {
                let (qc, kc, vc) = (head * d, h + head * d, 2 * h + head * d);
                q.fill(0.0);
                kt.fill(0.0);
                for i in 0..n {
                    let row = &self.x[(start + i) * width..][..width];
                    for c in 0..d {
                        q[i * d + c] = row[qc + c] + self.op.bias[qc + c];
                        kt[c * kp + i] = row[kc + c] + self.op.bias[kc + c];
                        v[i * d + c] = row[vc + c] + self.op.bias[vc + c];
                    }
                }
                for i0 in (0..n).step_by(ROWS) {
                    // Scores of rows i0..i0+ROWS against every key (padded keys score 0 and
                    // are left out of the softmax below).
                    for j0 in (0..kp).step_by(KEYS) {
                        let mut acc = [[0f32; KEYS]; ROWS];
                        for c in 0..d {
                            let k: &[f32; KEYS] =
                                kt[c * kp + j0..][..KEYS].try_into().unwrap_or(&[0.0; KEYS]);
                            for (r, a) in acc.iter_mut().enumerate() {
                                let qv = q[(i0 + r) * d + c];
                                for (a, &k) in a.iter_mut().zip(k) {
                                    *a += qv * k;
                                }
                            }
                        }
                        for (r, a) in acc.iter().enumerate() {
                            p[r * kp + j0..][..KEYS].copy_from_slice(a);
                        }
                    }
                    let rows = ROWS.min(n - i0);
                    for r in 0..rows {
                        let row = &mut p[r * kp..][..n];
                        let max = lane_max(row);
                        let inv = 1.0 / exp_sum(row, max);
                        row.iter_mut().for_each(|s| *s *= inv);
                    }
                    // Context rows: Σ_j p[r][j] · V[j].
                    o.fill(0.0);
                    for j in 0..n {
                        let vj = &v[j * d..][..d];
                        for r in 0..rows {
                            let pr = p[r * kp + j];
                            for (o, &vv) in o[r * d..][..d].iter_mut().zip(vj) {
                                *o += pr * vv;
                            }
                        }
                    }
                    for r in 0..rows {
                        self.out[(start + i0 + r) * h + head * d..][..d]
                            .copy_from_slice(&o[r * d..][..d]);
                    }
                }
            }
            start += n;
        }
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
        // Lengths around the block sizes (4 rows, 16 keys), and a single token.
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
