//! Time budgets and cancellation for compilation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::EngineError;

/// A deadline plus a cancellation flag, checked periodically by long loops.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    deadline: Option<(Instant, Duration)>,
    cancel: Option<Arc<AtomicBool>>,
}

impl Budget {
    /// No limit.
    pub fn unlimited() -> Self {
        Budget::default()
    }

    /// A budget that expires `timeout` from now and/or when `cancel` is set.
    pub fn new(timeout: Option<Duration>, cancel: Option<Arc<AtomicBool>>) -> Self {
        Budget { deadline: timeout.map(|t| (Instant::now() + t, t)), cancel }
    }

    /// Errors when the deadline passed or cancellation was requested.
    #[inline]
    pub fn check(&self) -> Result<(), EngineError> {
        if let Some(flag) = &self.cancel {
            if flag.load(Ordering::Relaxed) {
                return Err(EngineError::Cancelled);
            }
        }
        if let Some((at, total)) = self.deadline {
            if Instant::now() >= at {
                return Err(EngineError::Timeout(total.as_secs_f64()));
            }
        }
        Ok(())
    }
}
