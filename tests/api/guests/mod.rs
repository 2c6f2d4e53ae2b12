//! The simulated guests, reached as users reach a VM: the serial console over virt-api's
//! websocket (virtctl's protocol), the guest agent's reads, in-guest power.

mod client;
mod console;
mod power;
