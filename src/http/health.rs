//! Health endpoints: `/healthz`, `/livez`, `/readyz` and the store's write probe (A.16).

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};

use crate::http::params::Query;
use crate::http::shutdown::Phase;
use crate::http::state::AppState;
use crate::object::error::ApiError;

/// The write probe's deadline.
const PROBE_DEADLINE: Duration = Duration::from_secs(1);

/// The process is up and serving.
pub async fn ping(_state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok"))
}

/// 200 when a write goes through the store within the deadline, else 500; no body either way.
pub async fn store_probe(state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    match tokio::time::timeout(PROBE_DEADLINE, state.store.probe()).await {
        Ok(Ok(())) => Ok(HttpResponse::Ok().finish()),
        Ok(Err(e)) => {
            log::warn!("store health probe failed: {e:?}");
            Ok(HttpResponse::InternalServerError().finish())
        }
        Err(_) => {
            log::warn!("store health probe did not finish within {PROBE_DEADLINE:?}");
            Ok(HttpResponse::InternalServerError().finish())
        }
    }
}

/// `/readyz` as kube-apiserver's `handleRootHealth` answers it, with its `ping` and `shutdown`
/// checks: `ok` (or, with `?verbose`, each check and `readyz check passed`); when a check fails,
/// 500 listing every check, failures with their reason withheld. `?exclude=<check>` skips one.
pub async fn ready(state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let shutting_down = state.phases.phase() != Phase::Serving;
    let query = Query::parse(req)?;
    let mut checks = vec![("ping".to_owned(), true)];
    // A backend fed from elsewhere (etcd) is ready only while its feed is up and caught up:
    // `<backend>-feed`, e.g. `etcd-feed`.
    if let Some(fed) = state.store.feed_ready().await {
        if let Err(e) = &fed {
            log::warn!("readyz: the {} feed is not ready: {e}", state.store.facts().name);
        }
        checks.push((format!("{}-feed", state.store.facts().name), fed.is_ok()));
    }
    checks.push(("shutdown".to_owned(), !shutting_down));
    let checks: Vec<(&str, bool)> = checks.iter().map(|(n, ok)| (n.as_str(), *ok)).collect();
    let (ok, body) = readiness(&checks, &query);
    let mut answer = if ok { HttpResponse::Ok() } else { HttpResponse::InternalServerError() };
    Ok(answer
        .content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body))
}

/// Whether every check not excluded passed, and the body kube writes for `checks` (name,
/// passed) under `query`.
fn readiness(checks: &[(&str, bool)], query: &Query) -> (bool, String) {
    use std::fmt::Write as _;
    let mut excluded = query.all("exclude");
    let verbose = query.get("verbose").is_some();
    let mut out = String::new();
    let mut failed = false;
    for (name, passed) in checks {
        if excluded.contains(name) {
            excluded.retain(|e| e != name);
            let _ = writeln!(out, "[+]{name} excluded: ok");
        } else if *passed {
            let _ = writeln!(out, "[+]{name} ok");
        } else {
            failed = true;
            let _ = writeln!(out, "[-]{name} failed: reason withheld");
        }
    }
    if !excluded.is_empty() {
        excluded.sort_unstable();
        excluded.dedup();
        let names: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        let _ = writeln!(
            out,
            "warn: some health checks cannot be excluded: no matches for {}",
            names.join(",")
        );
    }
    if failed {
        // net/http's `http.Error` ends the message with a newline.
        out.push_str("readyz check failed\n");
        (false, out)
    } else if verbose {
        out.push_str("readyz check passed\n");
        (true, out)
    } else {
        (true, "ok".into())
    }
}

#[cfg(test)]
mod tests {
    use super::{readiness, Query};

    fn q(text: &str) -> Query {
        Query::from_query(text).unwrap()
    }

    #[test]
    fn readiness_answers_as_kube() {
        let up = [("ping", true), ("shutdown", true)];
        let down = [("ping", true), ("shutdown", false)];
        assert_eq!(readiness(&up, &q("")), (true, "ok".into()));
        assert_eq!(
            readiness(&up, &q("verbose")),
            (true, "[+]ping ok\n[+]shutdown ok\nreadyz check passed\n".into())
        );
        let failed = "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n";
        assert_eq!(readiness(&down, &q("")), (false, failed.into()));
        assert_eq!(readiness(&down, &q("verbose=1")), (false, failed.into()));
        assert_eq!(
            readiness(&down, &q("exclude=shutdown&exclude=etcd&exclude=bogus")),
            (true, "ok".into())
        );
        assert_eq!(
            readiness(&down, &q("exclude=shutdown&exclude=etcd&verbose")),
            (
                true,
                "[+]ping ok\n[+]shutdown excluded: ok\nwarn: some health checks cannot be \
                 excluded: no matches for \"etcd\"\nreadyz check passed\n"
                    .into()
            )
        );
    }
}
