//! Freeing large structures off the path of the request that let them go.
//!
//! A cache that evicts a quarter of itself frees thousands of allocations
//! at once; the compile or mask that happened to fill it paid for all of
//! them (the rule cache's eviction took 5 ms of a 0.7 ms compile). Such
//! garbage goes to one thread that only drops what it is sent.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

type Garbage = Box<dyn Send>;

fn sender() -> Option<&'static Sender<Garbage>> {
    static SENDER: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            let spawned = std::thread::Builder::new().name("formcast-free".into()).spawn(move || {
                for garbage in rx {
                    drop(garbage);
                }
            });
            spawned.ok().map(|_| tx)
        })
        .as_ref()
}

/// Drops `x` on the dropping thread (here when that thread cannot be made).
pub fn drop_elsewhere<T: Send + 'static>(x: T) {
    match sender() {
        // A send fails only if the thread is gone: `x` comes back and drops here.
        Some(tx) => drop(tx.send(Box::new(x))),
        None => drop(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    struct Flag(Arc<AtomicBool>, std::thread::ThreadId);
    impl Drop for Flag {
        fn drop(&mut self) {
            // Dropped, and not on the thread that let it go.
            self.0.store(std::thread::current().id() != self.1, Ordering::SeqCst);
        }
    }

    #[test]
    fn garbage_is_dropped_on_another_thread() {
        let done = Arc::new(AtomicBool::new(false));
        drop_elsewhere(Flag(done.clone(), std::thread::current().id()));
        let t = std::time::Instant::now();
        while !done.load(Ordering::SeqCst) {
            assert!(t.elapsed() < std::time::Duration::from_secs(10), "never dropped elsewhere");
            std::thread::yield_now();
        }
    }
}
