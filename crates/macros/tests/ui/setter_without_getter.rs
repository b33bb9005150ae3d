#[tether::object("ui.Counter")]
pub struct Counter {}

#[tether::methods]
impl Counter {
    #[tether(setter)]
    fn set_n(&self, _n: i64) {}
}

fn main() {}
