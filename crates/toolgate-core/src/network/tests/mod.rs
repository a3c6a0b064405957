//! End-to-end tests of the egress proxy: real servers on 127.0.0.1, real clients.

mod attacks;
mod clients;
mod decisions;
mod lent;
mod support;
