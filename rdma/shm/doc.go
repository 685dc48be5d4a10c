// Package shm is the transport between the processes of one node: packets
// through single-producer/single-consumer rings in shared memory, and
// rendezvous Put and Get by one copy with cross-memory attach.
package shm
