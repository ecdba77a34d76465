//! Device choice (`PHIGUARD_DEVICE=auto|cpu|metal|cuda`) and CPU thread set-up.
//!
//! The device is chosen once, at start-up, and handed to every model load: a model's
//! tensors live on one device for its whole life. `auto` prefers Metal, then CUDA, when
//! the binary was built with that feature and the device opens; otherwise the CPU.

use candle_core::Device;

use super::{DeviceError, InferenceError, Result};

/// The value of `PHIGUARD_DEVICE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// Metal or CUDA when built in and available, else the CPU.
    #[default]
    Auto,
    /// Always the CPU.
    Cpu,
    /// Apple Metal (needs the `metal` feature).
    Metal,
    /// NVIDIA CUDA, device 0 (needs the `cuda` feature).
    Cuda,
}

/// Parses a `PHIGUARD_DEVICE` value (case-insensitive; empty means `auto`).
///
/// # Errors
/// [`InferenceError::Device`] for anything other than `auto`, `cpu`, `metal`, `cuda`.
pub fn parse_device(value: &str) -> Result<DeviceChoice> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(DeviceChoice::Auto),
        "cpu" => Ok(DeviceChoice::Cpu),
        "metal" => Ok(DeviceChoice::Metal),
        "cuda" => Ok(DeviceChoice::Cuda),
        _ => Err(InferenceError::Device(DeviceError::Unknown)),
    }
}

impl DeviceChoice {
    /// Opens the device.
    ///
    /// # Errors
    /// [`InferenceError::Device`] when an explicit `metal` / `cuda` was asked for and
    /// the binary lacks the feature or the device does not open.
    pub fn open(self) -> Result<Device> {
        match self {
            DeviceChoice::Cpu => Ok(Device::Cpu),
            DeviceChoice::Metal => open_metal(),
            DeviceChoice::Cuda => open_cuda(),
            DeviceChoice::Auto => Ok(open_metal().or_else(|_| open_cuda()).unwrap_or(Device::Cpu)),
        }
    }
}

fn open_metal() -> Result<Device> {
    if cfg!(feature = "metal") && candle_core::utils::metal_is_available() {
        Device::new_metal(0).map_err(|e| InferenceError::Device(DeviceError::Open(e)))
    } else {
        Err(InferenceError::Device(DeviceError::NotBuilt("metal")))
    }
}

fn open_cuda() -> Result<Device> {
    if cfg!(feature = "cuda") && candle_core::utils::cuda_is_available() {
        Device::new_cuda(0).map_err(|e| InferenceError::Device(DeviceError::Open(e)))
    } else {
        Err(InferenceError::Device(DeviceError::NotBuilt("cuda")))
    }
}

/// Reads `PHIGUARD_DEVICE` and opens the device it names.
///
/// # Errors
/// As [`parse_device`] and [`DeviceChoice::open`].
pub fn device_from_env() -> Result<Device> {
    parse_device(&std::env::var("PHIGUARD_DEVICE").unwrap_or_default())?.open()
}

/// Makes candle's CPU ops single-threaded, so that parallelism comes from the worker
/// threads that each run whole batches.
///
/// candle reads `RAYON_NUM_THREADS` on every matmul (1 means no gemm threading) and
/// rayon reads it when its global pool starts. This sets it to `intra_op_threads` unless
/// the operator already set it. Call it once in `main`, before the async runtime or any
/// other thread starts: changing the environment while other threads run is a data race.
pub fn init_cpu_threads(intra_op_threads: usize) {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", intra_op_threads.max(1).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_choice_and_rejects_others() -> Result<()> {
        assert_eq!(parse_device("")?, DeviceChoice::Auto);
        assert_eq!(parse_device(" CPU ")?, DeviceChoice::Cpu);
        assert_eq!(parse_device("metal")?, DeviceChoice::Metal);
        assert_eq!(parse_device("Cuda")?, DeviceChoice::Cuda);
        let err = parse_device("tpu").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("device error: PHIGUARD_DEVICE must be one of auto, cpu, metal, cuda")
        );
        Ok(())
    }

    #[test]
    fn cpu_always_opens_and_auto_falls_back() -> Result<()> {
        assert!(DeviceChoice::Cpu.open()?.is_cpu());
        if !cfg!(any(feature = "metal", feature = "cuda")) {
            assert!(DeviceChoice::Auto.open()?.is_cpu());
            assert!(matches!(
                DeviceChoice::Cuda.open(),
                Err(InferenceError::Device(DeviceError::NotBuilt("cuda")))
            ));
        }
        Ok(())
    }
}
