//! Test plugin: one type and two functions, exported through the plugin ABI.

use std::sync::atomic::{AtomicI64, Ordering};

use tether::ObjectArc;

/// A counter made by the sample plugin.
#[tether::object("sample.Counter")]
pub struct Counter {
    count: AtomicI64,
}

// The methods, with increment_by's default as a parameter: the `changed` feature builds the
// plugin with another default (a registry whose signature differs, for the stale-binding checks).
macro_rules! counter_methods {
    ($by_default:tt) => {
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

            /// Add `by` (1 unless given; 2 in the `changed` build) and return the new count.
            fn increment_by(&self, #[tether(default = $by_default)] by: i64) -> i64 {
                self.count.fetch_add(by, Ordering::Relaxed) + by
            }

            /// The count if it is at least `min`, else None (a nullable result, for the bindings).
            fn count_at_least(&self, min: i64) -> Option<i64> {
                Some(self.count.load(Ordering::Relaxed)).filter(|c| *c >= min)
            }

            /// The type's short name; the method is named `class`, a word Python, JavaScript and Java
            /// reserve (for the bindings' keyword rule).
            #[tether(name = "class")]
            fn class_name(&self) -> String {
                "Counter".to_string()
            }

            /// Set the count to `new` (a parameter name Java reserves) and return the old one.
            fn swap(&self, new: i64) -> i64 {
                self.count.swap(new, Ordering::Relaxed)
            }
        }
    };
}

#[cfg(not(feature = "changed"))]
counter_methods!(1);
#[cfg(feature = "changed")]
counter_methods!(2);

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
