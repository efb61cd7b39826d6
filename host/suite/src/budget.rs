//! A memory budget for work a suite controls that has no bound of its own:
//! rendering a Nunjucks/Jinja template. minijinja bounds the instructions a
//! template runs (fuel), not the bytes it builds: `{% set ns.s = ns.s ~ ns.s %}`
//! in a loop of 60, or `a|replace("a", a)` four times over, asks for
//! exabytes in a few instructions.
//!
//! The binary's global allocator reports every allocation and release to
//! [`on_alloc`] and [`on_dealloc`]; while [`within`] runs on a thread, the
//! bytes that thread holds beyond what it held at the start are counted,
//! and past the budget the process stops at once with exit code 2 and a
//! message naming what was being rendered — never the machine's memory
//! filling up. Nothing is counted outside [`within`], and nothing at all
//! where the allocator does not report (unit tests): the budget then only
//! costs nothing.

use std::cell::Cell;

/// The most a template may hold while it renders.
pub const TEMPLATE_BYTES: usize = 256 << 20;

thread_local! {
    /// The budget of the current `within` call (0: none).
    static LIMIT: Cell<usize> = const { Cell::new(0) };
    /// Bytes allocated minus bytes released on this thread since it began.
    static USED: Cell<isize> = const { Cell::new(0) };
    /// What is being rendered, for the message (borrowed from `within`'s
    /// caller for the length of the call).
    static WHAT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// The most text all templates of one process may render together: a
/// short config can render many large prompts (30 tests × 64 MiB), each
/// within [`TEMPLATE_BYTES`], and fill the memory all the same.
pub const TOTAL_RENDERED: u64 = 512 << 20;

static RENDERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts `len` bytes of rendered text against [`TOTAL_RENDERED`]; past
/// it, an error to report at the template.
pub fn rendered(len: usize) -> Result<(), String> {
    let total = RENDERED.fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed) + len as u64;
    if total > TOTAL_RENDERED {
        Err(format!(
            "the suite's templates render more than {} MiB of text in total; evalhost refuses it rather than fill the machine's memory",
            TOTAL_RENDERED >> 20
        ))
    } else {
        Ok(())
    }
}

/// Runs `f` with `limit` bytes of budget on this thread; `what` names the
/// work in the message if it runs out.
pub fn within<T>(limit: usize, what: &str, f: impl FnOnce() -> T) -> T {
    struct Restore(usize, isize, (*const u8, usize));
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = LIMIT.try_with(|l| l.set(self.0));
            let _ = USED.try_with(|u| u.set(self.1));
            let _ = WHAT.try_with(|w| w.set(self.2));
        }
    }
    let saved = Restore(
        LIMIT.with(Cell::get),
        USED.with(Cell::get),
        WHAT.with(Cell::get),
    );
    USED.with(|u| u.set(0));
    WHAT.with(|w| w.set((what.as_ptr(), what.len())));
    LIMIT.with(|l| l.set(limit));
    let out = f();
    drop(saved);
    out
}

/// Called by the global allocator before it allocates `size` bytes.
#[inline]
pub fn on_alloc(size: usize) {
    let Ok(limit) = LIMIT.try_with(Cell::get) else {
        return;
    };
    if limit == 0 {
        return;
    }
    let used = USED.try_with(|u| {
        let n = u
            .get()
            .saturating_add(isize::try_from(size).unwrap_or(isize::MAX));
        u.set(n);
        n
    });
    if let Ok(used) = used
        && used > 0
        && used as usize > limit
    {
        exceeded(limit);
    }
}

/// Called by the global allocator after it releases `size` bytes.
#[inline]
pub fn on_dealloc(size: usize) {
    if LIMIT.try_with(Cell::get).unwrap_or(0) == 0 {
        return;
    }
    let _ = USED.try_with(|u| u.set(u.get().saturating_sub(isize::try_from(size).unwrap_or(0))));
}

/// Says what ran out, without allocating, and stops the process (exit 2:
/// the suite is at fault, as for any other suite error).
#[cold]
fn exceeded(limit: usize) -> ! {
    fn say(text: &[u8]) {
        // SAFETY: writing a valid buffer to the standard error descriptor.
        unsafe {
            libc::write(2, text.as_ptr().cast(), text.len());
        }
    }
    let _ = LIMIT.try_with(|l| l.set(0));
    say(b"error: ");
    if let Ok((ptr, len)) = WHAT.try_with(Cell::get)
        && !ptr.is_null()
    {
        // SAFETY: `within` keeps the borrowed text alive while its limit is
        // set, and this runs only then.
        say(unsafe { std::slice::from_raw_parts(ptr, len) });
        say(b": ");
    }
    say(b"the template needs more than ");
    let mut digits = [0u8; 20];
    let mut n = limit >> 20;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    say(&digits[at..]);
    say(b" MiB of memory to render; evalhost stopped rather than fill the machine's memory\n  hint: a template that doubles a string in a loop, or replaces a character with a long string repeatedly, grows without bound: build the text another way\n");
    // SAFETY: ends the process at once; no destructor is needed.
    unsafe { libc::_exit(2) }
}

/// Whether a render error is one of these limits (the total rendered, a
/// template's fuel or memory, the engine failing) rather than the
/// template's own mistake: a limit refuses the suite, a mistake errors
/// the rows that use the template (promptfoo's behaviour).
pub fn is_limit(message: &str) -> bool {
    message.contains("rather than fill the machine's memory")
        || message.contains("out of fuel")
        || message.contains("the template engine failed")
}

/// The most instructions one template may run.
pub const TEMPLATE_FUEL: u64 = 5_000_000;

/// `render` with a panic in the template engine (an overflow on absurd
/// arguments) turned into an error.
/// Rendering is also held to [`TEMPLATE_BYTES`] of memory.
pub fn guarded<T>(render: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    within(TEMPLATE_BYTES, "a template of the suite", || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(render))
            .unwrap_or_else(|_| Err("the template engine failed on this template".into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_per_call_and_restored() {
        // Without a reporting allocator, nothing is counted and nothing stops.
        let v = within(1, "x", || vec![0u8; 1 << 20].len());
        assert_eq!(v, 1 << 20);
        assert_eq!(LIMIT.with(Cell::get), 0);
        on_alloc(1 << 30);
        on_dealloc(1 << 30);
    }
}
