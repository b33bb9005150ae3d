//! Waiting for a short critical section another thread holds (a slot or cell lock).

/// Spin politely: a CPU pause for the first tries, then yield the thread to whoever holds it.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    #[cfg(loom)]
    {
        // Under the model checker a spinning thread must let the holder run.
        let _ = spins;
        loom::thread::yield_now();
        return;
    }
    #[cfg(not(loom))]
    spin(spins);
}

#[cfg(not(loom))]
#[inline]
fn spin(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
