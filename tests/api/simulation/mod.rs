//! The simulated KubeVirt (`--simulate`): lifecycles, failures on request, each kind's
//! controllers, storage kinds and volumes, and virt-api's action API.

mod actions;
mod simulate;
mod simulate_failures;
mod simulate_kinds;
mod simulate_storage;
mod simulate_volumes;
