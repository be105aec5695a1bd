//! **Drive** the engines: launch one or use a URL ([`engine`]), decide when each
//! request is sent ([`load`], with a load level shared by several clients in
//! [`load::share`]), stream it ([`client`]) and keep what happened as raw facts
//! ([`record`], the one source of truth every later stage reads). Uses only
//! [`crate::define`] and the helpers beside every stage.

pub mod client;
pub mod engine;
pub mod load;
pub mod record;
