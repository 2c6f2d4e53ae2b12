//! Storage: crash safety and the database file, a full disk, etcd (one member, a cluster
//! under faults), several replicas and leader election.

mod crash;
mod etcd;
mod etcd_cluster;
mod full_disk;
mod leader;
mod replicas;
mod storage_files;
