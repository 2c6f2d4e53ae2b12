//! Running it: authentication and authorization, TLS, health, logging, overload and
//! shutdown.

mod auth;
mod health;
mod logging;
mod overload;
mod shutdown;
mod tls;
mod tour;
