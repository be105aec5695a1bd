//! Fake servers, started one way: on 127.0.0.1 port 0 in a task of the test's
//! runtime, aborted when the returned [`Server`] is dropped. (The simulator as an
//! engine is started the way a user starts it: `kind = "sim"` in a profile.)

use std::future::Future;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running fake server.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    task: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Server {
    /// Leaves the server running until the test's runtime ends; its URL.
    pub fn detach(mut self) -> String {
        self.task = None;
        self.url.clone()
    }
}

/// Binds 127.0.0.1 port 0 and runs `serve` on the listener.
pub async fn spawn<F, Fut>(serve: F) -> Server
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    Server {
        url: format!("http://{addr}"),
        task: Some(tokio::spawn(serve(listener))),
    }
}

/// An axum app as a fake server.
pub async fn spawn_router(app: axum::Router) -> Server {
    spawn(|listener| async move {
        let _ = axum::serve(listener, app).await;
    })
    .await
}

/// A loopback port nothing listens on (bound, then released): an engine that is
/// gone.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
