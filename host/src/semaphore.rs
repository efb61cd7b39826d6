//! A counting semaphore: bounds work in flight (plugin calls across all
//! tests, judge calls across all graders) separately from the workers that
//! start it.

/// A counting semaphore.
#[derive(Debug)]
pub struct Semaphore {
    free: std::sync::Mutex<usize>,
    available: std::sync::Condvar,
}

/// A held permit; released when dropped.
#[derive(Debug)]
pub struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    /// A semaphore with `permits` permits.
    pub fn new(permits: usize) -> Self {
        Self {
            free: std::sync::Mutex::new(permits.max(1)),
            available: std::sync::Condvar::new(),
        }
    }

    /// Waits for a permit.
    pub fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.available.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        self.0.available.notify_one();
    }
}
