//go:build mpi && !linux

package mpi

import "runtime"

// osYield lets other goroutines run.
func osYield() { runtime.Gosched() }
