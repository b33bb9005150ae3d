#[tether::object("ui.Counter")]
pub struct Counter {}

#[tether::methods]
impl Counter {
    #[tether(getter, readonly)]
    fn n(&self) -> i64 {
        0
    }
}

fn main() {}
