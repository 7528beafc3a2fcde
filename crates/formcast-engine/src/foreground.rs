//! Foreground work and background warm-up. A request's compile is
//! foreground; warm-up done on the process's behalf (the rule and partition
//! caches a new tokenizer fills, see `formcast-py`'s prewarm) waits for it
//! to finish, so that on a small machine the first request does not share
//! its cores, caches and memory bandwidth with work meant to speed it up.
//! Waiting before each step is not enough: a step already running when a
//! request arrives (a warm-up compile of a few milliseconds) shared the cores
//! with it, and W3's first compile, arriving 10–30 ms after the tokenizer,
//! took up to 4.7 ms instead of 2.2 (`benchmarks/first_request.py`). So a
//! step runs under [`background_budget`], which foreground work cancels as
//! it begins; the step is then tried again once the process is quiet.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::limits::Budget;

static BUSY: AtomicUsize = AtomicUsize::new(0);
/// When foreground work last ended, in microseconds since [`epoch`].
static LAST_END_US: AtomicU64 = AtomicU64::new(0);

/// How many pieces of foreground work have ended, with a condition variable
/// that wakes [`wait_for_work_after`].
static DONE: Mutex<u64> = Mutex::new(0);
static DONE_CHANGED: Condvar = Condvar::new();

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

fn now_us() -> u64 {
    epoch().elapsed().as_micros() as u64
}

/// Foreground work in progress, until dropped.
#[must_use = "the work counts as foreground only while the guard lives"]
pub struct Foreground(());

/// Set when foreground work begins; the cancel flag of [`background_budget`].
fn preempted() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Foreground work begins: busy, and the background step in flight is
/// cancelled.
fn begin_work() {
    epoch();
    BUSY.fetch_add(1, Ordering::SeqCst);
    preempted().store(true, Ordering::SeqCst);
}

/// Foreground work ends: the quiet time counts from now.
fn end_work() {
    LAST_END_US.store(now_us(), Ordering::SeqCst);
    BUSY.fetch_sub(1, Ordering::SeqCst);
}

impl Foreground {
    pub fn begin() -> Foreground {
        begin_work();
        Foreground(())
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        end_work();
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        DONE_CHANGED.notify_all();
    }
}

/// A mask being computed, until dropped: it counts as foreground work for
/// [`busy`], [`wait_until_idle`] and the background budget, but wakes no
/// [`wait_for_work_after`] when it ends (a decode computes masks a few
/// microseconds apart; the waiters are woken by the compile before them).
/// Without it, the heap reserve's refill (`formcast-py`'s heap.rs) began
/// 5 ms after a compile, in the middle of the masks decoding under it, and
/// one of them took 2–4 ms instead of 0.3 (W5, one process in three).
#[must_use = "the mask counts as foreground work only while the guard lives"]
pub struct MaskWork(());

impl MaskWork {
    pub fn begin() -> MaskWork {
        begin_work();
        MaskWork(())
    }
}

impl Drop for MaskWork {
    fn drop(&mut self) {
        end_work();
    }
}

/// Whether foreground work is running now.
pub fn busy() -> bool {
    BUSY.load(Ordering::SeqCst) != 0
}

/// How many pieces of foreground work have ended so far.
pub fn work_done() -> u64 {
    *DONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Blocks (without polling) until more than `done` pieces of foreground
/// work have ended, and returns the new count.
pub fn wait_for_work_after(done: u64) -> u64 {
    let mut n = DONE.lock().unwrap_or_else(|e| e.into_inner());
    while *n <= done {
        n = DONE_CHANGED.wait(n).unwrap_or_else(|e| e.into_inner());
    }
    *n
}

/// Returns once no foreground work has run for `quiet` (a schema's
/// front-end and its compile are two calls: the gap between them is not
/// idle time).
pub fn wait_until_idle(quiet: Duration) {
    let quiet_us = quiet.as_micros() as u64;
    loop {
        let since = now_us().saturating_sub(LAST_END_US.load(Ordering::SeqCst));
        if BUSY.load(Ordering::SeqCst) == 0 && since >= quiet_us {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits as [`wait_until_idle`] does, then returns a budget for one step of
/// background work that expires (`EngineError::Cancelled`) as soon as
/// foreground work begins: the caller drops the step and tries it again
/// after the next wait.
pub fn background_budget(quiet: Duration) -> Budget {
    // Cleared before the wait checks that nothing runs: work that begins
    // after the check sets it again.
    preempted().store(false, Ordering::SeqCst);
    wait_until_idle(quiet);
    Budget::new(None, Some(preempted().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counters are process-wide: these tests take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn wakes_when_foreground_work_ends() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let before = work_done();
        let t = std::thread::spawn(move || wait_for_work_after(before));
        std::thread::sleep(Duration::from_millis(10));
        assert!(!t.is_finished(), "returned before any work ended");
        drop(Foreground::begin());
        assert_eq!(t.join().unwrap(), before + 1);
    }

    #[test]
    fn a_mask_is_foreground_work_that_wakes_no_waiter() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let budget = background_budget(Duration::from_millis(1));
        let before = work_done();
        let mask = MaskWork::begin();
        assert!(busy());
        assert!(matches!(budget.check(), Err(crate::EngineError::Cancelled)));
        drop(mask);
        assert!(!busy());
        assert_eq!(work_done(), before);
        // Idle only once the quiet time has passed since the mask ended.
        let t = Instant::now();
        wait_until_idle(Duration::from_millis(20));
        assert!(t.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn foreground_work_cancels_the_background_budget() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let budget = background_budget(Duration::from_millis(1));
        assert!(budget.check().is_ok());
        let fg = Foreground::begin();
        assert!(matches!(budget.check(), Err(crate::EngineError::Cancelled)));
        drop(fg);
        // Still cancelled after the work ended; a new budget is not.
        assert!(budget.check().is_err());
        assert!(background_budget(Duration::from_millis(1)).check().is_ok());
    }

    #[test]
    fn waits_for_foreground_work_and_its_quiet_time() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let fg = Foreground::begin();
        let t = std::thread::spawn(|| {
            wait_until_idle(Duration::from_millis(20));
            Instant::now()
        });
        std::thread::sleep(Duration::from_millis(30));
        let released = Instant::now();
        drop(fg);
        let returned = t.join().unwrap();
        // Not before the work ended, and then only after 20 ms of quiet
        // (less a microsecond: the clock is kept in whole microseconds).
        assert!(returned >= released + Duration::from_millis(20) - Duration::from_micros(1), "{:?}", returned.duration_since(released));
    }
}
