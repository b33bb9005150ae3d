//! Compile-fail cases (each .stderr is the message an author sees, at the offending code) and
//! a pass case that runs.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
