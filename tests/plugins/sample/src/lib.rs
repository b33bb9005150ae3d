//! Test plugin: one type and two functions, exported through the plugin ABI.

use std::sync::atomic::{AtomicI64, Ordering};

use tether::ObjectArc;

/// A counter made by the sample plugin.
#[tether::object("sample.Counter")]
pub struct Counter {
    count: AtomicI64,
}

#[tether::methods]
impl Counter {
    #[tether(constructor)]
    fn new(start: i64) -> Self {
        Counter { count: AtomicI64::new(start) }
    }

    /// The current count.
    #[tether(getter)]
    fn count(&self) -> i64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether the count is even (a snake_case name, for the frontends' naming rules).
    #[tether(getter)]
    fn is_even(&self) -> bool {
        self.count.load(Ordering::Relaxed) % 2 == 0
    }

    /// Add one and return the new count.
    fn increment(&self) -> i64 {
        self.count.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Add `by` (1 unless given) and return the new count.
    fn increment_by(&self, #[tether(default = 1)] by: i64) -> i64 {
        self.count.fetch_add(by, Ordering::Relaxed) + by
    }
}

/// Say hello to `name`.
#[tether::function("sample.greet")]
fn greet(name: &str) -> String {
    format!("hello, {name}")
}

/// A new counter starting at `start`.
#[tether::function("sample.make_counter")]
fn make_counter(start: i64) -> ObjectArc<Counter> {
    ObjectArc::new(Counter::new(start))
}

tether::module! {
    types: [Counter],
    functions: [greet, make_counter],
}
