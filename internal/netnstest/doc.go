// Package netnstest holds the multi-node test: a job of 2 "nodes" × 2
// processes on this machine, each node a network namespace of its own
// (joined to the other by a veth pair) with a host name of its own, so
// that the processes of a node talk through shared memory and those of
// different nodes through TCP. The test creates and removes the
// namespaces; without the rights to (not root, no iproute2), it runs the
// same job with every pair over loopback TCP and says why.
package netnstest
