//! Giving memory back to the OS where phiguard knows it is done with it.
//!
//! Why a module: resident memory is part of the product (a menu-bar app beside an EHR, a
//! headless service sized by its RSS), and the few process-wide knobs that keep it down
//! are platform calls that need `unsafe`. They live here, in one place, each with its
//! measurement; everything else in the crate stays `unsafe`-free. On platforms without the
//! call each function is a no-op. Where the memory goes: `docs/bench-peers.md`.

/// Caps glibc's malloc arenas at `arenas`. Call first thing in `main`, before any thread.
///
/// glibc gives each thread that allocates under contention an arena of its own and keeps
/// freed memory in it; the inference workers and the async runtime's threads each held
/// 13–30 MB of freed activation buffers (a `deid` run over 615 notes: 145–190 MB peak with
/// the default of 8 per core, 143–145 MB with 2, no measurable change in speed).
#[allow(unsafe_code)]
pub fn limit_malloc_arenas(arenas: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a glibc tunable; called before threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

/// Hands the heap pages freed so far back to the OS.
///
/// A model load reads the weight file, converts it to f32 and (int8) quantizes the dense
/// layers: about twice the model's final size, all freed once the model is ready, and kept
/// by glibc for reuse unless trimmed (the bundled model: 118 MB resident after its load
/// against about 45 MB of weights kept).
#[allow(unsafe_code)]
pub fn release_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own free lists; it takes no pointers and locks
    // each arena.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Asks the kernel to reclaim the resident pages of `bytes`, read-only data of this
/// executable (the embedded bundled model once it is unpacked). The content stays what it
/// was: `MADV_PAGEOUT` only evicts, and a later read faults the pages back in from the
/// file. Without it the 37 MB of embedded weights touched while unpacking stayed resident.
#[allow(unsafe_code)]
pub fn page_out(bytes: &'static [u8]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let start = (bytes.as_ptr() as usize).div_ceil(page) * page;
        let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
        if end > start {
            // SAFETY: [start, end) lies inside `bytes`, a live 'static mapping; MADV_PAGEOUT
            // never changes its content (an error, e.g. on kernels before 5.4, is ignored).
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}
