//! Nothing to build: the suite lives in tests/.
