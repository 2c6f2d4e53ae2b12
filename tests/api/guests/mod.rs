//! The simulated guests, reached as users reach a VM: the serial console over virt-api's
//! websocket (virtctl's protocol), VNC's RFB and the screenshot, the guest agent's reads,
//! in-guest power.

mod client;
mod console;
mod credentials;
mod power;
mod ssh;
mod vnc;
