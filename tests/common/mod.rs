//! What the root package's integration tests share: the test device and the example
//! binaries they run.

use std::path::PathBuf;

/// The device under test: `$IBVERBS_TEST_DEVICE`, default `rxe0`.
pub fn device() -> String {
    std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned())
}

/// The example binary `tool`, from `target/<profile>/examples/` beside this test
/// (`target/<profile>/deps/<test>-<hash>`); it must have been built.
pub fn example(tool: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the test executable");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join(tool))
        .expect("the test executable is in target/<profile>/deps");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test` for the package, which builds the examples",
        path.display()
    );
    path
}
