//! The world around a VM: kube's own kinds a cluster has beside KubeVirt's (nodes, pods,
//! services, endpoints, volumes and their claims, storage classes, endpoint slices), served
//! as kube-apiserver serves them.

mod datavolumes;
mod drain;
mod endpoints;
mod graceful_deletion;
mod kinds;
mod launchers;
mod nodes;
mod pod_events;
mod pod_logs;
mod pod_subresources;
mod services;
mod storage_protection;
mod update_rules;
mod volumes;
