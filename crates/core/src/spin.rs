//! Waiting for a short critical section another thread holds (a slot or cell lock).

/// Spin politely: a CPU pause for the first tries, then yield the thread to whoever holds it.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
