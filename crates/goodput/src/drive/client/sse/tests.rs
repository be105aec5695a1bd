use super::*;

fn all(parts: &[&[u8]]) -> Vec<String> {
    let mut p = SseParser::new(SseLimits::default());
    let mut out = Vec::new();
    for part in parts {
        for e in p.push(part).unwrap() {
            out.push(String::from_utf8(e).unwrap());
        }
    }
    out
}

#[test]
fn events_split_anywhere_and_any_line_ending() {
    let text = b"data: {\"a\":1}\r\n\r\n: comment\n\ndata:x\rdata: y\r\rdata: [DONE]\n\n";
    let whole = all(&[text]);
    assert_eq!(whole, vec!["{\"a\":1}", "x\ny", "[DONE]"]);
    // every split point, including between \r and \n
    for i in 0..text.len() {
        assert_eq!(all(&[&text[..i], &text[i..]]), whole, "split at {i}");
    }
    // byte by byte
    let bytes: Vec<&[u8]> = text.chunks(1).collect();
    assert_eq!(all(&bytes), whole);
}

#[test]
fn a_leading_byte_order_mark_is_skipped_however_split() {
    let text = b"\xEF\xBB\xBFdata: a\n\ndata: b\n\n";
    for i in 0..text.len() {
        assert_eq!(all(&[&text[..i], &text[i..]]), ["a", "b"], "split at {i}");
    }
    // Only at the start; a start that merely begins like one is kept.
    assert_eq!(all(&[b"data: \xEF\xBB\xBFa\n\n"]).len(), 1);
    assert_eq!(all(&[b"\xEF\xBBdata: a\n\n"]), Vec::<String>::new());
    assert_eq!(all(&[b"\xEF", b"data: a\n\n", b"data: b\n\n"]), ["b"]);
}

#[test]
fn reasoning_under_either_name_is_text_and_counted_once() {
    for field in ["reasoning", "reasoning_content"] {
        let data = format!(r#"{{"choices":[{{"delta":{{"{field}":"abc"}}}}]}}"#);
        let c = parse_data(data.as_bytes()).unwrap();
        assert_eq!((c.text_len, c.reasoning_len), (3, 3), "{field}");
    }
    // vLLM kept both names in sync for a while: the same text, counted once.
    let c = parse_data(
        br#"{"choices":[{"delta":{"reasoning":"abc","reasoning_content":"abc","content":"d"}}]}"#,
    )
    .unwrap();
    assert_eq!((c.text_len, c.reasoning_len), (4, 3));
    let c = parse_data(br#"{"choices":[{"delta":{"reasoning":null,"content":"d"}}]}"#).unwrap();
    assert_eq!((c.text_len, c.reasoning_len), (1, 0));
    let c = parse_data(
        br#"{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":5}}}"#,
    )
    .unwrap();
    assert_eq!(c.usage.unwrap().reasoning_tokens(), Some(5));
}

#[test]
fn other_fields_are_ignored_and_event_without_data_is_not_dispatched() {
    assert_eq!(all(&[b"event: x\nid: 3\n\nretry: 5\ndata\n\n"]), vec![""]);
}

#[test]
fn oversize_line_is_an_error_not_an_allocation() {
    let mut p = SseParser::new(SseLimits {
        max_event_bytes: 64,
        ..SseLimits::default()
    });
    let big = vec![b'a'; 65];
    assert!(p.push(&big).is_err());
    let mut p = SseParser::new(SseLimits {
        max_event_bytes: 64,
        ..SseLimits::default()
    });
    for _ in 0..10 {
        if p.push(&[b'a'; 10]).is_err() {
            return;
        }
    }
    panic!("limit not enforced across pushes");
}

#[test]
fn kept_reply_text_is_the_answer_bounded_at_a_character() {
    let mut kept = String::new();
    let c = parse_data_keeping(
        br#"{"choices":[{"delta":{"content":"h\u00e9","reasoning_content":"no"}}]}"#,
        Some((&mut kept, 64)),
    )
    .unwrap();
    assert_eq!((c.text_len, kept.as_str()), (5, "h\u{e9}"));
    parse_data_keeping(
        br#"{"choices":[{"text":"xy\u00e9z"}]}"#,
        Some((&mut kept, 6)),
    )
    .unwrap();
    // 3 bytes kept, room for 3 more: "xy" and not half of the two-byte character.
    assert_eq!(kept, "h\u{e9}xy");
}

#[test]
fn chunk_shapes() {
    let c = parse_data(br#"{"choices":[{"index":0,"text":"hello"}]}"#).unwrap();
    assert_eq!(c.text_len, 5);
    let c = parse_data(br#"{"choices":[{"delta":{"role":"assistant"}}]}"#).unwrap();
    assert_eq!(c.text_len, 0);
    let c = parse_data(br#"{"choices":[{"delta":{"content":"h\u00e9"}}],"goodput_probe_ns":7}"#)
        .unwrap();
    assert_eq!((c.text_len, c.probe_ns), (3, Some(7)));
    let c =
        parse_data(br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}"#).unwrap();
    assert_eq!(c.usage.unwrap().completion_tokens, Some(9));
    let c = parse_data(br#"{"usage":{"prompt_tokens":3,"completion_tokens":9}}"#).unwrap();
    assert_eq!(c.text_len, 0);
    assert!(matches!(
        parse_data(b"{not json"),
        Err(ChunkError::Malformed(_))
    ));
    assert!(matches!(
        parse_data(br#"{"id":"x"}"#),
        Err(ChunkError::Malformed(_))
    ));
    assert!(matches!(
        parse_data(br#"{"error":{"message":"boom"}}"#),
        Err(ChunkError::Server(_))
    ));
    assert!(matches!(
        parse_data(br#"{"choices":3}"#),
        Err(ChunkError::Malformed(_))
    ));
}

proptest::proptest! {
    #[test]
    fn never_panics_and_stays_bounded(chunks in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..200), 0..20)) {
        let mut p = SseParser::new(SseLimits { max_event_bytes: 256, ..SseLimits::default() });
        for c in &chunks {
            if let Ok(events) = p.push(c) {
                for e in events {
                    proptest::prop_assert!(e.len() <= 256);
                    let _ = parse_data(&e);
                }
            }
            proptest::prop_assert!(p.line.len() <= 256 && p.data.len() <= 256);
        }
    }
}

/// The cut a stored excerpt or finish reason gets comes after redaction: a
/// known key across the cut leaves none of its characters.
#[test]
fn excerpts_and_finish_reasons_are_redacted_before_they_are_cut() {
    const KEY: &str = "sk-cut-after-redaction-0123456789abcdefghij";
    crate::redact::remember(KEY);
    let data = format!("{}{KEY}", "x".repeat(180));
    let ChunkError::Malformed(m) = parse_data(data.as_bytes()).unwrap_err() else {
        panic!("malformed")
    };
    assert!(!m.contains(&KEY[..8]), "{m}");
    let chunk = format!(r#"{{"choices":[{{"text":"a","finish_reason":"xx{KEY}"}}]}}"#);
    let f = parse_data(chunk.as_bytes()).unwrap().finish_reason.unwrap();
    assert!(
        !f.contains(&KEY[..8]) && f.len() <= MAX_FINISH_REASON,
        "{f}"
    );
    let event = format!(r#"{{"error":"{}{KEY}"}}"#, "y".repeat(180));
    let ChunkError::Server(s) = parse_data(event.as_bytes()).unwrap_err() else {
        panic!("server error")
    };
    assert!(!s.contains(&KEY[..8]), "{s}");
}

/// Giving the buffers back between reads changes no event, wherever the reads
/// split the stream, and leaves none held between events.
#[test]
fn releasing_idle_buffers_between_reads_changes_nothing() {
    let text = b"data: {\"a\":1}\r\n\r\n: comment\n\ndata:x\rdata: y\r\rdata: [DONE]\n\n";
    let whole = all(&[text]);
    for i in 0..text.len() {
        let mut p = SseParser::new(SseLimits::default());
        let mut out = Vec::new();
        for part in [&text[..i], &text[i..]] {
            out.extend(p.push(part).unwrap());
            p.release_idle();
        }
        let out: Vec<String> = out
            .into_iter()
            .map(|e| String::from_utf8(e).unwrap())
            .collect();
        assert_eq!(out, whole, "split at {i}");
    }
    let mut p = SseParser::new(SseLimits::default());
    assert_eq!(p.push(b"data: {\"a\":1}\n\n").unwrap().len(), 1);
    p.release_idle();
    assert_eq!((p.data.capacity(), p.line.capacity()), (0, 0));
}

/// A whole one-line event in one read is lent from the read: the parser copies
/// and keeps nothing.
#[test]
fn whole_events_are_lent_from_the_read() {
    let mut p = SseParser::new(SseLimits::default());
    let text = b"data: {\"a\":1}\n\ndata: b\r\n\r\ndata:c\r\r";
    let mut rest = &text[..];
    let mut got = Vec::new();
    while let Some(d) = p.next_event(&mut rest).unwrap() {
        got.push(d.to_vec());
    }
    assert_eq!(got, [&b"{\"a\":1}"[..], b"b", b"c"]);
    assert_eq!((p.data.capacity(), p.line.capacity()), (0, 0));
    // The lone CR that ended the last event: an LF in the next read is its.
    assert_eq!(p.push(b"\ndata: d\n\n").unwrap(), [b"d".to_vec()]);
}

proptest::proptest! {
    /// Lending whole events changes nothing: a stream read whole (events lent)
    /// gives the events it gives read a byte at a time (never lent), whatever
    /// its lines and line endings.
    #[test]
    fn lent_and_copied_events_agree(lines in proptest::collection::vec((0usize..7, 0usize..3), 0..40)) {
        const LINES: [&str; 7] = ["data: a", "data:b", "data", ": note", "event: x", "", "data:  c "];
        const ENDS: [&str; 3] = ["\n", "\r", "\r\n"];
        let text: String = lines.iter().map(|&(l, e)| format!("{}{}", LINES[l], ENDS[e])).collect();
        let mut whole = SseParser::new(SseLimits::default());
        let mut bytes = SseParser::new(SseLimits::default());
        let a = whole.push(text.as_bytes()).unwrap();
        let b: Vec<Vec<u8>> = text.as_bytes().chunks(1).flat_map(|c| bytes.push(c).unwrap()).collect();
        proptest::prop_assert_eq!(a, b, "{:?}", text);
    }
}
