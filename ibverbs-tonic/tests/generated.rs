//! The echo service's generated client and server (`examples/grpc_echo/echo.Echo.rs`) are
//! checked in, so that the crate has no build script and users compile no code generator.
//! This test generates them again from the service's description (tonic-build's manual
//! builder over the prost messages of `examples/grpc_echo/service.rs`, no protoc) and fails
//! if the checked-in file differs. After changing the description (or tonic-build),
//! `RDMA_VERBS_REGENERATE=1 cargo test -p rdma-verbs-tonic --test generated` writes the
//! file anew.

use std::path::Path;

use tonic_build::manual::{Builder, Method, Service};

/// The echo service: a unary call, a server stream, a bidirectional stream.
fn echo() -> Service {
    let method = |name: &str, route: &str, input: &str| {
        Method::builder()
            .name(name)
            .route_name(route)
            .input_type(format!("super::{input}"))
            .output_type("super::Blob")
            .codec_path("tonic_prost::ProstCodec")
    };
    Service::builder()
        .name("Echo")
        .package("echo")
        .method(method("unary", "Unary", "Blob").build())
        .method(
            method("server_stream", "ServerStream", "StreamRequest")
                .server_streaming()
                .build(),
        )
        .method(
            method("bidi", "Bidi", "Blob")
                .client_streaming()
                .server_streaming()
                .build(),
        )
        .build()
}

#[test]
fn checked_in_echo_service_is_what_tonic_build_generates() {
    let out = std::env::temp_dir().join(format!("rdma-verbs-tonic-echo-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    Builder::new().out_dir(&out).compile(&[echo()]);
    let generated = std::fs::read_to_string(out.join("echo.Echo.rs")).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/grpc_echo/echo.Echo.rs");
    if std::env::var_os("RDMA_VERBS_REGENERATE").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap();
    assert!(
        checked_in == generated,
        "{} is not what tonic-build generates: run this test with RDMA_VERBS_REGENERATE=1",
        path.display()
    );
}
