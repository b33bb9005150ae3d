#[tether::object("ui.Counter")]
pub struct Counter {}

#[tether::methods]
impl Counter {
    fn a(&self) -> i64 {
        1
    }
}

#[tether::methods]
impl Counter {
    fn b(&self) -> i64 {
        2
    }
}

fn main() {}
