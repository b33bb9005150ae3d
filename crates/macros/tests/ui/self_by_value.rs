#[tether::object("ui.Counter")]
pub struct Counter {}

#[tether::methods]
impl Counter {
    fn consume(self) {}
}

fn main() {}
