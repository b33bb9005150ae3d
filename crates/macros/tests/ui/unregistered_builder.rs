#![deny(unused_must_use)]

pub struct Gauge {}
tether::declare_object!(Gauge, "ui.Gauge");

fn main() {
    tether::TypeBuilder::<Gauge>::new().doc("never registered");
}
