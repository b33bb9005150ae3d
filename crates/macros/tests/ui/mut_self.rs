#[tether::object("ui.Counter")]
pub struct Counter {
    n: i64,
}

#[tether::methods]
impl Counter {
    fn bump(&mut self) {
        self.n += 1;
    }
}

fn main() {}
