use super::*;

fn head(text: &str) -> Result<Option<(Head, usize)>, HeadError> {
    parse_head(text.as_bytes())
}

/// Every piece of data `body` decodes to, fed in pieces of `step` bytes.
fn decode_all(
    mut d: Decoder,
    body: &[u8],
    step: usize,
) -> Result<(Vec<u8>, Decoder, usize), BodyError> {
    let (mut out, mut left) = (Vec::new(), 0);
    for piece in body.chunks(step) {
        let mut buf = Bytes::copy_from_slice(piece);
        while let Some(data) = d.decode(&mut buf)? {
            out.extend_from_slice(&data);
        }
        left += buf.len();
    }
    Ok((out, d, left))
}

#[test]
fn a_request_head_names_the_path_the_headers_and_the_length() {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("host", HeaderValue::from_static("127.0.0.1:8000"));
    h.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
    let text = String::from_utf8(request_head("/v1/completions", &h, 42)).unwrap();
    assert_eq!(
        text,
        "POST /v1/completions HTTP/1.1\r\ncontent-type: application/json\r\nhost: 127.0.0.1:8000\r\ncontent-length: 42\r\n\r\n"
    );
}

#[test]
fn heads_are_parsed_with_their_framing_and_keep_alive() {
    let (h, n) = head("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\nrest")
        .unwrap()
        .unwrap();
    assert_eq!((h.status.as_u16(), n), (200, 80));
    assert_eq!(h.headers["content-type"], "text/event-stream");
    assert!(matches!(h.body, Decoder::Chunked(_)) && h.keep_alive);
    let (h, _) = head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nConnection: Close\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!((h.body, h.keep_alive), (Decoder::Length(5), false));
    let (h, _) = head("HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
    assert_eq!((h.body, h.keep_alive), (Decoder::Close, false));
    let (h, _) = head("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(!h.keep_alive, "HTTP/1.0 closes unless it says keep-alive");
    let (h, _) = head("HTTP/1.1 204 No Content\r\n\r\n").unwrap().unwrap();
    assert_eq!((h.body, h.keep_alive), (Decoder::Done, true));
    let (h, _) = head("HTTP/1.1 100 Continue\r\n\r\n").unwrap().unwrap();
    assert!(h.status.is_informational());
    let (h, _) = head("HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(h.body, Decoder::Length(3));
    let (h, _) = head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(
        matches!(h.body, Decoder::Chunked(_)) && !h.keep_alive,
        "chunked wins over a length, and the connection is not reused"
    );
    let (h, _) = head("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ncontent-length: 3\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(
        h.body,
        Decoder::Close,
        "a coding other than chunked last: until the close"
    );
}

#[test]
fn partial_oversized_and_broken_heads_are_told_apart() {
    assert!(head("HTTP/1.1 200 OK\r\ncontent-ty").unwrap().is_none());
    let big = format!("HTTP/1.1 200 OK\r\nx-big: {}", "a".repeat(MAX_HEAD_BYTES));
    assert!(matches!(head(&big), Err(HeadError::TooLarge(_))));
    let many: String = (0..=MAX_HEADERS).map(|i| format!("x-{i}: 1\r\n")).collect();
    let r = head(&format!("HTTP/1.1 200 OK\r\n{many}\r\n"));
    assert!(
        matches!(r, Err(HeadError::TooLarge(ref s)) if s.contains("headers")),
        "{r:?}"
    );
    assert!(matches!(
        head("SSH-2.0-OpenSSH\r\n\r\n"),
        Err(HeadError::Malformed(_))
    ));
    let r = head("HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\n");
    assert!(matches!(r, Err(HeadError::Malformed(_))));
    let r = head("HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n");
    assert!(matches!(r, Err(HeadError::Malformed(_))));
}

#[test]
fn chunked_bodies_decode_whatever_the_reads_split() {
    let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
    for step in [1, 2, 3, 7, body.len()] {
        let start = Decoder::Chunked(Chunk::Size {
            value: 0,
            digits: 0,
        });
        let (out, d, left) = decode_all(start, body, step).unwrap();
        assert_eq!(out, b"hello, world", "step {step}");
        assert_eq!(
            (d, left),
            (Decoder::Done, 4),
            "the next response's bytes stay"
        );
    }
    let start = Decoder::Chunked(Chunk::Size {
        value: 0,
        digits: 0,
    });
    let (out, d, _) = decode_all(start, b"A\r\n0123456789\r\n0\r\n\r\n", 4).unwrap();
    assert_eq!((out.len(), d), (10, Decoder::Done));
    // Leading zeros are a size like any other, however many.
    let mut zeros = vec![b'0'; 10_000];
    zeros.extend_from_slice(b"3\r\nabc\r\n0\r\n\r\n");
    let (out, d, _) = decode_all(start, &zeros, 1000).unwrap();
    assert_eq!((out.as_slice(), d), (&b"abc"[..], Decoder::Done));
}

#[test]
fn broken_or_endless_chunk_framing_is_an_error() {
    let start = Decoder::Chunked(Chunk::Size {
        value: 0,
        digits: 0,
    });
    for bad in [
        &b"zz\r\n"[..],
        b"5\r\nhelloXX",
        b"5\nhello\r\n",
        b"1234567890abcdef0\r\n",
        b"\r\n",
    ] {
        assert!(
            decode_all(start, bad, 3).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let mut endless = b"1;".to_vec();
    endless.extend(std::iter::repeat_n(b'x', MAX_CHUNK_LINE_BYTES as usize + 1));
    assert!(decode_all(start, &endless, 100).is_err());
    let mut trailers = b"0\r\n".to_vec();
    trailers.extend(std::iter::repeat_n(b'x', MAX_TRAILER_BYTES as usize + 1));
    assert!(decode_all(start, &trailers, 100).is_err());
}

#[test]
fn length_and_close_bodies_end_where_they_say() {
    let (out, d, left) = decode_all(Decoder::Length(5), b"helloNEXT", 2).unwrap();
    assert_eq!((out.as_slice(), d, left), (&b"hello"[..], Decoder::Done, 4));
    let (out, mut d, _) = decode_all(Decoder::Close, b"all of it", 4).unwrap();
    assert_eq!(out, b"all of it");
    assert!(d.closed().is_ok() && d == Decoder::Done);
    let mut cut = Decoder::Length(5);
    assert!(matches!(cut.closed(), Err(BodyError::Cut)));
    let mut cut = Decoder::Chunked(Chunk::Data(3));
    assert!(matches!(cut.closed(), Err(BodyError::Cut)));
}
