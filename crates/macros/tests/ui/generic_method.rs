#[tether::object("ui.Counter")]
pub struct Counter {}

#[tether::methods]
impl Counter {
    fn show<T: std::fmt::Display>(&self, value: T) -> String {
        value.to_string()
    }
}

fn main() {}
