//! Test plugin: two types and two functions, exported through the plugin ABI.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use tether::{Error, ObjectArc};

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

    /// A counter starting at the number `text` spells in base `radix` (10 unless given); a
    /// ValueError when it spells none. A static method (no receiver), for the bindings'
    /// static cases.
    fn parse(text: &str, #[tether(default = 10)] radix: i64) -> Result<Self, Error> {
        let base = u32::try_from(radix)
            .ok()
            .filter(|r| (2..=36).contains(r))
            .ok_or_else(|| Error::value(format!("radix {radix} is not in 2..=36")))?;
        i64::from_str_radix(text, base)
            .map(Counter::new)
            .map_err(|e| Error::value(format!("{text:?} is not a base-{base} number ({e})")))
    }
}

// increment_by in a block of its own, so the `changed` feature can swap its signature (a
// `#[cfg]` applies to a whole `#[tether::methods]` block, not to one method in it).
#[cfg(not(feature = "changed"))]
#[tether::methods(block = 1)]
impl Counter {
    /// Add `by` (1 unless given) and return the new count.
    fn increment_by(&self, #[tether(default = 1)] by: i64) -> i64 {
        self.count.fetch_add(by, Ordering::Relaxed) + by
    }
}

/// The `changed` feature's increment_by: its default is 2, a changed signature that bindings
/// generated without the feature must refuse (the stale-binding tests).
#[cfg(feature = "changed")]
#[tether::methods(block = 1)]
impl Counter {
    /// Add `by` (2 unless given) and return the new count.
    fn increment_by(&self, #[tether(default = 2)] by: i64) -> i64 {
        self.count.fetch_add(by, Ordering::Relaxed) + by
    }
}

/// Names the target languages reserve and values that may be missing: the bindings
/// generator's keyword-escaping and nullability cases.
#[tether::object("sample.Names")]
pub struct Names {
    label: Mutex<Option<String>>,
}

#[tether::methods]
impl Names {
    #[tether(constructor)]
    fn new(#[tether(default = None)] label: Option<String>) -> Self {
        Names { label: Mutex::new(label) }
    }

    /// The label, or None when there is none.
    #[tether(getter)]
    fn label(&self) -> Option<String> {
        self.label.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    #[tether(setter)]
    fn set_label(&self, label: Option<String>) {
        *self.label.lock().unwrap_or_else(|e| e.into_inner()) = label;
    }

    /// A method named like a keyword of Python and JavaScript (`import`), with a parameter
    /// that is one too (`class`): the label's length plus `class`, or None without a label.
    #[tether(name = "import")]
    fn import_length(&self, r#class: i64) -> Option<i64> {
        self.label().map(|l| l.len() as i64 + r#class)
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

/// `value` times `factor`, wrapping: a leaf of ints (it has an int entry, which typed bindings
/// reach without boxing).
#[tether::function("sample.scale")]
#[tether(leaf)]
fn scale(value: i64, factor: i64) -> i64 {
    value.wrapping_mul(factor)
}

tether::module! {
    types: [Counter, Names],
    functions: [greet, make_counter, scale],
}
