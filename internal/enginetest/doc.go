// Package enginetest runs fibermpi programs under the launchers clusters
// run — MPICH's mpiexec (Hydra, PMI-1 over PMI_FD and PMI_PORT, and PMI-2),
// Slurm's srun (--mpi=pmi2 and plain) and torchrun's variables set by hand —
// and checks that they join, exchange, compute, and that a killed, exiting
// or aborting process ends the job — also in the launchers' modes that
// leave the survivors running (mpiexec -disable-auto-cleanup, srun
// --kill-on-bad-exit=0), where each survivor must see the loss itself. Its tests start the test binary itself
// under each launcher (the child runs TestChild, selected by an
// environment variable).
//
// A launcher that is not installed, or a Slurm cluster that is not
// running, skips its tests with the reason; FIBERMPI_ENGINES_REQUIRED, a
// list of "hydra" and "slurm" (set by make test-launch, which installs and
// starts them through scripts/engines.sh), turns those skips into failures.
package enginetest
