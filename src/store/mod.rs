//! Store (skeleton).
