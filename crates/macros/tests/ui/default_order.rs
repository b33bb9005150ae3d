#[tether::function("ui.span")]
fn span(#[tether(default = 0)] from: i64, to: i64) -> i64 {
    to - from
}

fn main() {}
