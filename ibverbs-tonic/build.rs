//! The echo service of the example and the tests (`$OUT_DIR/echo.Echo.rs`), generated
//! without protoc: tonic-build's manual builder over the prost messages the example
//! defines by hand (`examples/grpc_echo/service.rs`).

use tonic_build::manual::{Builder, Method, Service};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let method = |name: &str, route: &str, input: &str| {
        Method::builder()
            .name(name)
            .route_name(route)
            .input_type(format!("super::{input}"))
            .output_type("super::Blob")
            .codec_path("tonic_prost::ProstCodec")
    };
    let echo = Service::builder()
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
        .build();
    Builder::new().compile(&[echo]);
}
