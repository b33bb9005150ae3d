pub struct Plain {}

tether::module! {
    types: [Plain],
}

fn main() {}
