//! Watch fan-out (skeleton).
