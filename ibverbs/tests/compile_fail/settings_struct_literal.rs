// Inputs can grow without breaking callers (the crate docs' Stability section): outside the
// crate a settings value is made by its constructor and chained setters, never by a struct
// literal (its fields are private), so a setting added in a minor version breaks no caller.
use rdma_verbs::{AhAttr, AltPath, ConnectOptions, Route};

fn main() {
    let _settings = ConnectOptions {
        retry_cnt: 6,
        ..ConnectOptions::new()
    };
    let _route = Route {
        sl: 3,
        ..Route::new()
    };
    let _path = AltPath {
        timeout: 16,
        ..AltPath::new(AhAttr::new(1))
    };
}
