//! A server behind a private CA (#37 item 27): a CA and a server certificate made
//! here (rcgen), TLS served on loopback in front of `goodput sim` (tokio-rustls);
//! without the CA the request fails on the certificate, with `--ca-cert`, an
//! engine's `ca_cert` or `SSL_CERT_FILE` the run succeeds; a bad file named by the
//! run is exit 2, one named by the machine's variable is said and skipped.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::cli::goodput;
use common::load_share::start_sim;
use tokio_rustls::rustls;

/// A CA (its PEM in `dir/ca.pem`) and a certificate for 127.0.0.1 signed by it.
fn private_ca(dir: &Path) -> (PathBuf, rustls::ServerConfig) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "goodput test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, ca.pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    (pem, config)
}

/// TLS on a loopback port of its own, each connection passed on to `to`; the
/// `https` URL.
async fn tls_in_front_of(to: SocketAddr, config: rustls::ServerConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing
                // to pass on.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(to).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    url
}

/// `goodput run` of four requests against `url` in vLLM's flags, with `extra`;
/// `env` set (and `SSL_CERT_FILE`/`SSL_CERT_DIR` removed otherwise).
async fn run(
    dir: &Path,
    url: &str,
    extra: &[&str],
    env: Option<(&str, &Path)>,
) -> std::process::Output {
    let mut cmd = goodput();
    cmd.current_dir(dir)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .args(["run", "--url", url, "--model", "goodput-sim"])
        .args(["--max-concurrency", "1", "--num-prompts", "4"])
        .args(["--random-input-len", "16", "--random-output-len", "4"])
        .args(["--no-html", "--fresh", "--force", "-o", "r.json"])
        .args(extra)
        .timeout(Duration::from_secs(120));
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_is_trusted_when_named_and_only_then() {
    let sim = start_sim();
    let plain: SocketAddr = sim.url.trim_start_matches("http://").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ca, config) = private_ca(dir.path());
    let url = tls_in_front_of(plain, config).await;

    // The client alone: a certificate error without the CA, an answer with it.
    let models = format!("{url}/v1/models");
    let e = goodput::drive::client::http_client(1)
        .unwrap()
        .get(&models)
        .send()
        .await
        .unwrap_err();
    let chain = goodput::drive::engine::probe::error_chain(&e);
    assert!(chain.contains("certificate"), "{chain}");
    let files = [goodput::drive::client::tls::CaFile {
        named_by: "--ca-cert".into(),
        path: ca.clone(),
    }];
    let roots = goodput::drive::client::tls::roots(&files, |_| None).unwrap();
    let client = goodput::drive::client::http_client_trusting(1, roots).unwrap();
    let answer = client.get(&models).send().await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());

    // The command: refused at once without the CA, naming the way to trust it.
    let o = run(dir.path(), &url, &[], None).await;
    let e = text(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(e.contains("certificate") && e.contains("--ca-cert"), "{e}");
    // With --ca-cert, and with SSL_CERT_FILE.
    let ca_arg = ca.to_str().unwrap();
    let o = run(dir.path(), &url, &["--ca-cert", ca_arg], None).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = run(dir.path(), &url, &[], Some(("SSL_CERT_FILE", &ca))).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // And with SSL_CERT_DIR: a folder holding the CA among other files.
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    std::fs::copy(&ca, certs.join("ca.pem")).unwrap();
    std::fs::write(certs.join("README"), "not a certificate\n").unwrap();
    let o = run(dir.path(), &url, &[], Some(("SSL_CERT_DIR", &certs))).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    // A file that is missing or holds no certificate: exit 2, naming it.
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();
    for bad in [dir.path().join("missing.pem"), not_pem] {
        let b = bad.to_str().unwrap();
        let o = run(dir.path(), &url, &["--ca-cert", b], None).await;
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains(b), "{}", text(&o.stderr));
        // The machine's variable naming a bad file: said and skipped (the
        // engine behind the private CA then fails its handshake), not exit 2.
        let o = run(dir.path(), &url, &[], Some(("SSL_CERT_FILE", &bad))).await;
        assert_ne!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert_ne!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(&format!("SSL_CERT_FILE {b}"))
                && text(&o.stderr).contains("not used"),
            "{}",
            text(&o.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engines_ca_cert_key_is_trusted() {
    let sim = start_sim();
    let plain: SocketAddr = sim.url.trim_start_matches("http://").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ca, config) = private_ca(dir.path());
    let url = tls_in_front_of(plain, config).await;
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"tls\"\n[slo]\nttft_ms = 1000\n[load]\nmode = \"concurrency\"\npoints = [1]\nrequests_per_trial = 4\n\
             trials = 1\n[workload]\ninput_tokens = 16\noutput_tokens = 4\n\
             [engines.private]\nurl = \"{url}\"\nmodel = \"goodput-sim\"\nca_cert = \"{}\"\n",
            ca.display()
        ),
    )
    .unwrap();
    let mut cmd = goodput();
    cmd.current_dir(dir.path())
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .arg("run")
        .arg(&profile)
        .args(["-o", "r.json", "--no-html", "--quiet"])
        .timeout(Duration::from_secs(120));
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}
