use super::*;
use crate::drive::record::Chunk;

#[test]
fn running_out_of_descriptors_is_the_clients_failure_not_the_servers() {
    for code in [libc::EMFILE, libc::ENFILE] {
        let e = std::io::Error::from_raw_os_error(code);
        assert!(out_of_files(&e));
        // Wrapped, as reqwest and hyper wrap it.
        let wrapped = std::io::Error::other(e);
        assert!(out_of_files(&wrapped));
    }
    assert!(!out_of_files(&std::io::Error::from_raw_os_error(
        libc::ECONNREFUSED
    )));
    let f = client_limit("cannot connect to 127.0.0.1:1");
    assert_eq!(f.kind, ErrorKind::ClientLimit);
    assert!(f.detail.contains("ulimit -n"), "{}", f.detail);
    assert_eq!(f.kind.label(None), "client_limit");
}

#[test]
fn content_chunk_bound_is_twice_max_tokens_and_at_least_64_more() {
    assert_eq!(max_content_chunks(Some(0)), 64);
    assert_eq!(max_content_chunks(Some(10)), 74);
    assert_eq!(max_content_chunks(Some(64)), 128);
    assert_eq!(max_content_chunks(Some(1000)), 2000);
    assert_eq!(max_content_chunks(Some(u32::MAX)), 2 * u32::MAX as usize);
    assert_eq!(max_content_chunks(None), UNASKED_MAX_CHUNKS);
    // The unasked bound keeps a record within 40 MiB (a chunk is 40 bytes).
    assert_eq!(std::mem::size_of::<Chunk>(), 40);
    assert!(UNASKED_MAX_CHUNKS * std::mem::size_of::<Chunk>() <= 40 << 20);
}
