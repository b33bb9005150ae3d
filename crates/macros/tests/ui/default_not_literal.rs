const TWO: i64 = 2;

#[tether::function("ui.repeat")]
fn repeat(text: String, #[tether(default = TWO)] times: i64) -> String {
    text.repeat(times as usize)
}

fn main() {}
