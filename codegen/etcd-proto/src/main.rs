//! Writes the etcd v3 client code the server checks in (`src/store/etcd/pb/`), so the normal
//! build needs no protoc. Run from anywhere; paths are relative to this crate.

use std::path::Path;

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = here.join("../../src/store/etcd/pb");
    std::fs::create_dir_all(&out).expect("output directory");
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .out_dir(&out)
        .compile_protos(&[here.join("proto/etcd.proto")], &[here.join("proto")])
        .expect("protoc on PATH (Debian: apt-get install protobuf-compiler) and a valid proto");
    println!("wrote {}", out.join("etcdserverpb.rs").display());
}
