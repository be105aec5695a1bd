//! **Model**: an engine's configuration fitted from its records ([`fit`]), and that
//! configuration run on the simulator's engine model in virtual time, through the
//! same trial loop as a real sweep ([`predict`]): what-if reports marked predicted;
//! and [`tune`], which flags of one engine serve the most load: a few measured, the
//! model fitted, every candidate predicted, the most promising measured.

pub mod fit;
pub mod predict;
pub mod tune;
