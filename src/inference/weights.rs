//! The checkpoint's tensors, handed to the model as it asks for them.
//!
//! Why not candle's own backend for a safetensors buffer: it turns an f16 tensor into f32
//! one value at a time (`to_dtype` maps each element), after copying it into an f16 tensor
//! first. The bundled model stores its matrices in f16, so that conversion was an eighth of
//! `phiguard deid`'s start-up CPU, part of it on the one thread that loads the embeddings
//! before the layers load in parallel. Here an f16 tensor wanted in f32 on the CPU is widened
//! straight from the file's bytes by `half`'s slice conversion (F16C, eight values an
//! instruction): the same f32 bits, since every f16 value is exact in f32. Everything else
//! (other dtypes, other devices) goes through candle's backend unchanged. Tensors are still
//! read one at a time as the model asks, so the f16 buffer never sits beside a full f32 copy.

use candle_core::safetensors::BufferedSafetensors;
use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use half::f16;
use half::slice::HalfFloatSliceExt;

/// A [`VarBuilder`] over one safetensors file's bytes, its values asked for in f32.
///
/// # Errors
/// When the bytes are not a safetensors file.
pub(crate) fn var_builder(
    bytes: Vec<u8>,
    device: &Device,
) -> candle_core::Result<VarBuilder<'static>> {
    let backend: Box<dyn SimpleBackend> = Box::new(Widening(BufferedSafetensors::new(bytes)?));
    Ok(VarBuilder::from_backend(
        backend,
        DType::F32,
        device.clone(),
    ))
}

/// candle's buffered backend, with f16 → f32 on the CPU done a slice at a time.
struct Widening(BufferedSafetensors);

impl Widening {
    fn load(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let view = self.0.get(name)?;
        if view.dtype() == safetensors::Dtype::F16 && dtype == DType::F32 && dev.is_cpu() {
            return Tensor::from_vec(widen(view.data()), view.shape(), dev);
        }
        self.0.load(name, dev)?.to_dtype(dtype)
    }
}

impl SimpleBackend for Widening {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let tensor = self.load(name, dtype, dev)?;
        if tensor.shape() != &s {
            return Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {name}"),
                expected: s,
                got: tensor.shape().clone(),
            }
            .bt());
        }
        Ok(tensor)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        self.load(name, dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.0.get(name).is_ok()
    }
}

/// Little-endian f16 bytes as f32 values. The bytes sit at any offset in the file's buffer,
/// so they are copied into an aligned block of f16 first (a plain copy), then widened.
fn widen(bytes: &[u8]) -> Vec<f32> {
    const BLOCK: usize = 4096;
    let mut out = vec![0f32; bytes.len() / 2];
    let mut block = [f16::ZERO; BLOCK];
    for (src, dst) in bytes.chunks(2 * BLOCK).zip(out.chunks_mut(BLOCK)) {
        let block = &mut block[..dst.len()];
        for (h, b) in block.iter_mut().zip(src.chunks_exact(2)) {
            *h = f16::from_le_bytes([b[0], b[1]]);
        }
        block.convert_to_f32_slice(dst);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 value, NaNs and infinities included, widens to the bits candle's
    /// per-element conversion gives, at an odd offset in the buffer too.
    #[test]
    fn widening_gives_candles_bits_for_every_f16() {
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut bytes = vec![0u8];
        bytes.extend(all.iter().flat_map(|h| h.to_le_bytes()));
        let ours = widen(&bytes[1..]);
        let candle = Tensor::new(all.as_slice(), &Device::Cpu)
            .and_then(|t| t.to_dtype(DType::F32))
            .and_then(|t| t.to_vec1::<f32>())
            .expect("candle");
        assert_eq!(ours.len(), candle.len());
        for (i, (a, b)) in ours.iter().zip(&candle).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "f16 bits {i:#06x}");
        }
    }

    /// Through a VarBuilder over a real safetensors buffer: f16 in f32 as candle gives it,
    /// f32 unchanged, a wrong shape refused.
    #[test]
    fn a_var_builder_reads_f16_and_f32_tensors_as_candle_does() {
        let dev = Device::Cpu;
        let h = Tensor::new(&[[1.5f32, -2.25, 65504.0], [0.0, 1e-7, -0.0]], &dev)
            .and_then(|t| t.to_dtype(DType::F16))
            .expect("f16");
        let f = Tensor::new(&[0.1f32, 0.2, 0.3], &dev).expect("f32");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.safetensors");
        candle_core::safetensors::save(
            &[("h".to_string(), h.clone()), ("f".to_string(), f.clone())]
                .into_iter()
                .collect(),
            &path,
        )
        .expect("save");
        let bytes = std::fs::read(&path).expect("read");
        let ours = var_builder(bytes.clone(), &dev).expect("ours");
        let theirs =
            VarBuilder::from_buffered_safetensors(bytes, DType::F32, &dev).expect("candle");
        for (name, shape) in [("h", (2, 3)), ("f", (3, 1))] {
            let shape: Shape = if name == "f" {
                (3,).into()
            } else {
                shape.into()
            };
            let a = ours.get(shape.clone(), name).expect("ours");
            let b = theirs.get(shape, name).expect("candle");
            assert_eq!(a.dtype(), DType::F32);
            let (a, b) = (
                a.flatten_all().and_then(|t| t.to_vec1::<f32>()).expect("a"),
                b.flatten_all().and_then(|t| t.to_vec1::<f32>()).expect("b"),
            );
            assert_eq!(
                a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
        assert!(ours.get((3, 2), "h").is_err());
        assert!(ours.contains_tensor("h") && !ours.contains_tensor("x"));
    }
}
