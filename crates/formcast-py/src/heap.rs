//! A reserve of touched heap, so that a compile does not meet fresh pages.
//!
//! Compiled grammars are kept (the compiler's cache), so the heap grows with
//! every new schema, and on a VM the first touch of each 4 KiB page is a
//! fault of 2–3 µs: o25423's compile met 880 of them, about 2 ms of its 4.
//! Once foreground work (see `formcast_engine::foreground`) has ended and
//! the process has been quiet for a moment, a thread allocates the reserve
//! in blocks, writes one byte of each page and frees it all. The allocator
//! keeps the freed memory (it hands nothing back to the system, see
//! `tune_allocator` in lib.rs) and hands it out again, so the next
//! compile's new pages are already there;
//! what the compile kept, the next refill faults in off its path. A
//! process with no compiles never starts the thread, and an idle one sleeps
//! on a condition variable. `FORMCAST_HEAP_RESERVE_MB` sets the size (0: no
//! reserve).

use std::sync::Once;
use std::time::Duration;

use formcast_engine::foreground;

const DEFAULT_RESERVE_MB: usize = 32;
/// Allocation size of the refill: big enough that a refill is a few dozen
/// allocations, small enough to come from the allocator's arenas as ordinary
/// pages that any thread's small allocations can reuse.
const BLOCK: usize = 1 << 20;
const PAGE: usize = 4096;
/// Quiet time before a refill: a schema's front-end and its compile are two
/// calls, and the gap between them is not idle time.
const QUIET: Duration = Duration::from_millis(5);

fn reserve_bytes() -> usize {
    let mb = std::env::var("FORMCAST_HEAP_RESERVE_MB").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_RESERVE_MB);
    mb.saturating_mul(1 << 20)
}

/// Starts the refilling thread (once per process).
pub(crate) fn keep_reserve() {
    static START: Once = Once::new();
    START.call_once(|| {
        let bytes = reserve_bytes();
        if bytes == 0 {
            return;
        }
        let _ = std::thread::Builder::new().name("formcast-heap".into()).spawn(move || {
            let _ = std::panic::catch_unwind(|| {
                // The first refill does not wait for work: the first compile
                // then finds the reserve too.
                let mut seen = foreground::work_done();
                loop {
                    foreground::wait_until_idle(QUIET);
                    refill(bytes);
                    seen = foreground::wait_for_work_after(seen);
                }
            });
        });
    });
}

/// Allocates `bytes` in blocks, touches every page and frees them; stops
/// early when foreground work begins (the two would share the cores).
fn refill(bytes: usize) {
    let mut blocks: Vec<Vec<u8>> = Vec::with_capacity(bytes / BLOCK);
    for _ in 0..bytes / BLOCK {
        if foreground::busy() {
            break;
        }
        let mut block: Vec<u8> = Vec::with_capacity(BLOCK);
        let p = block.as_mut_ptr();
        for offset in (0..BLOCK).step_by(PAGE) {
            // SAFETY: `offset < BLOCK`, the block's capacity; a volatile
            // write to uninitialized bytes is never read back and keeps the
            // compiler from dropping it.
            unsafe { std::ptr::write_volatile(p.add(offset), 0) };
        }
        blocks.push(block);
    }
}
