//! One request over a connection of goodput's own ([`super::direct`], `http://`
//! targets): the request sent and its head read, with one resend when a pooled
//! connection turns out closed, then the body read into the record.

use super::{
    client_limit, direct, drain, h1, not_a_stream, now_ns, ErrorKind, Exchange, Failure, Outgoing,
    RequestRecord, StatusCode, Target,
};

/// [`exchange`] on a connection of our own: taken from the pool (or opened, its
/// set-up time recorded as `connect`), read by this task, and given back when the
/// response ended cleanly. A pooled connection the server had closed is replaced
/// once, as [`send`] does. Each try's head is made for it and dropped once
/// written, so an open stream keeps no copy of it.
pub(super) async fn exchange_direct(
    pool: &direct::Pool,
    target: &Target,
    out: &Outgoing,
    mut at: Exchange<'_>,
) -> Result<(), Failure> {
    // Two steps: the request sent and its head read (with one resend), then the
    // body; the head's fields are checked and dropped in between.
    let (conn, head) = direct_head(pool, target, out, &mut at).await?;
    // Checked and dropped before the body is read: an open stream keeps no headers.
    let not_sse = not_a_stream(&head.headers);
    let answer = Answer {
        status: head.status,
        not_sse,
        body: head.body,
        keep_alive: head.keep_alive,
    };
    drop(head.headers);
    direct_body(pool, conn, answer, at).await
}

/// What [`direct_body`] needs of a response's head.
struct Answer {
    status: StatusCode,
    not_sse: Option<Failure>,
    body: h1::Decoder,
    keep_alive: bool,
}

/// The request sent on a pooled connection (or a new one, once more on a fresh
/// one when the pooled one had been closed) and its response's head read.
async fn direct_head(
    pool: &direct::Pool,
    target: &Target,
    out: &Outgoing,
    at: &mut Exchange<'_>,
) -> Result<(direct::Conn, h1::Head), Failure> {
    let (deadline, origin) = (at.deadline, at.origin);
    let mut retried = false;
    loop {
        // A resend never takes a pooled connection: it opens a new one (and leaves
        // the pool's connections where they are).
        let pooled = if retried { None } else { pool.checkout() };
        let reused = pooled.is_some();
        let mut conn = match pooled {
            Some(c) => c,
            None => open_direct(pool, target, at.rec, deadline, origin).await?,
        };
        // The request's head before it is stamped as sent.
        let head = direct::request_head(pool, &out.headers(&target.headers), out.body.len());
        let sent_is_now = !target.connect_in_ttft || reused;
        if sent_is_now {
            at.rec.sent = now_ns().saturating_sub(origin);
        }
        at.since = tokio::time::Instant::now();
        let (wait_until, no_headers) = at.header_wait(at.since);
        conn.stamps.expect_send();
        let outcome = tokio::time::timeout_at(wait_until, conn.exchange(head, &out.body)).await;
        match outcome {
            Err(_) => return Err(no_headers.into()),
            // The connection closed before any response (a kept-alive one the server
            // had closed meanwhile, as llama.cpp does after a few requests): the
            // request never reached the engine, so it is sent once more on a fresh
            // connection, as the `https` path does. `sent` is the resend; the delay
            // shows as send lag.
            Ok(Err(direct::Exchange::Unanswered(_))) if !retried => retried = true,
            Ok(Err(direct::Exchange::Unanswered(e))) => {
                return Err(Failure::new(
                    ErrorKind::Connect,
                    format!("no response from {}: {e}", pool.addr),
                ))
            }
            Ok(Err(direct::Exchange::Broken(detail))) => {
                return Err(Failure::new(ErrorKind::Connect, detail))
            }
            // Headers past the bounds are the server's answer, not a connection
            // that failed.
            Ok(Err(direct::Exchange::Head(h1::HeadError::TooLarge(detail)))) => {
                return Err(Failure::new(ErrorKind::TooLarge, detail))
            }
            Ok(Err(direct::Exchange::Head(e))) => {
                return Err(Failure::new(ErrorKind::Connect, e.to_string()))
            }
            Ok(Ok(head)) => {
                // The request left when its first write began (handed to the
                // kernel), not when it was queued.
                if let Some(w) = conn.stamps.first_write().filter(|_| sent_is_now) {
                    at.rec.sent = at.rec.sent.max(w.saturating_sub(origin));
                }
                return Ok((conn, head));
            }
        }
    }
}

/// The response's body read into the record, then drained; the connection given
/// back to the pool when the response ended cleanly.
async fn direct_body(
    pool: &direct::Pool,
    mut conn: direct::Conn,
    answer: Answer,
    mut at: Exchange<'_>,
) -> Result<(), Failure> {
    let Answer {
        status,
        not_sse,
        body,
        keep_alive,
    } = answer;
    let stamps = conn.stamps.clone();
    let mut body = direct::Body {
        conn: &mut conn,
        decoder: body,
    };
    at.consume(status, not_sse, &mut body, Some(&stamps))
        .await?;
    // The chunked body's last chunk follows `[DONE]`; read it (already timed: `done`
    // is stamped), so the connection can serve the next request.
    if drain(&mut body, at.rec).await && keep_alive && body.ended_cleanly() {
        pool.checkin(conn);
    }
    Ok(())
}

/// Opens a connection for `rec` before `deadline`, its set-up time recorded as
/// `connect` (and, with `connect_in_ttft`, `sent` stamped before it).
async fn open_direct(
    pool: &direct::Pool,
    target: &Target,
    rec: &mut RequestRecord,
    deadline: tokio::time::Instant,
    origin: u64,
) -> Result<direct::Conn, Failure> {
    let start = now_ns();
    if target.connect_in_ttft {
        rec.sent = start.saturating_sub(origin);
    }
    let c = match tokio::time::timeout_at(deadline, pool.connect()).await {
        Err(_) => {
            return Err(Failure::new(
                ErrorKind::Timeout,
                "no connection before the request timeout",
            ))
        }
        Ok(Err(e)) if e.out_of_files => return Err(client_limit(&e.detail)),
        Ok(Err(e)) => return Err(Failure::new(ErrorKind::Connect, e.detail)),
        Ok(Ok(c)) => c,
    };
    rec.connect = Some(now_ns().saturating_sub(start));
    Ok(c)
}
