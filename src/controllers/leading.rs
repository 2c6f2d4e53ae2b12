//! Singletons on one leader: background work that must run in one process at a time (the
//! garbage collector, the namespace controller, the events' expiry, KubeVirt's simulated controllers) runs
//! while the store says this process leads, writing through a registry fenced by that
//! leadership, and stops the moment it is lost. Each resumes from stored state when this process
//! (or another) leads again, as after a restart.

use tokio::task::LocalSet;

use crate::registry::Registry;

/// Runs `start`'s work whenever this process leads, until the store stops. `start` spawns local
/// tasks (`spawn_local`); they, and every task they spawn, live in a `LocalSet` of the term,
/// dropped when it ends, which aborts them all. Their writes carry the term's fence, so a task
/// still running on a deposed leader (a paused process) cannot write either.
pub async fn while_leading(registry: Registry, start: impl Fn(Registry)) {
    let mut leadership = registry.store().leadership();
    loop {
        let fence = match leadership.wait_for(Option::is_some).await {
            Ok(held) => held.clone().expect("waited for Some"),
            Err(_) => return,
        };
        log::info!("this server leads: starting the singletons");
        let term = LocalSet::new();
        let fenced = registry.fenced(fence.clone());
        term.run_until(async {
            start(fenced);
            // Ends when the fence changes or the store stops.
            let _ = leadership.wait_for(|now| now.as_ref() != Some(&fence)).await;
        })
        .await;
        drop(term);
        // The store said why (the campaign logs a lost term; a close says nothing).
        log::info!("this server no longer leads: its singletons stopped");
    }
}
