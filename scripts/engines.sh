#!/usr/bin/env bash
# The launchers of the cluster tests (internal/enginetest): MPICH's Hydra and
# a one-node Slurm cluster, installed with apt-get when missing and started
# for the tests.
#
#   scripts/engines.sh test       install, start Slurm, run the tests, stop Slurm
#   scripts/engines.sh install    apt-get install mpich slurm-wlm munge openssh-server
#                                 (what is missing)
#   scripts/engines.sh start      start munged, slurmctld and slurmd (prints the
#                                 variables to export: SLURM_CONF)
#   scripts/engines.sh stop       stop them (by their pid files)
#
# Slurm runs as root from a scratch directory, SLURM_DIR (default
# /tmp/fibermpi-slurm): a generated slurm.conf, state, spool, logs and pid
# files. It needs root (munged's key, the daemons); when it cannot start,
# `test` says why and runs the other launchers' tests (srun's are skipped
# with the reason). Environment: GO (go), SLURM_DIR, GOTESTFLAGS (-count=1).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
SLURM_DIR=${SLURM_DIR:-/tmp/fibermpi-slurm}
GOTESTFLAGS=${GOTESTFLAGS:--count=1}

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "engines: need root for: $*" >&2
		return 1
	fi
}

install_engines() {
	local want=()
	command -v mpiexec.hydra >/dev/null 2>&1 || want+=(mpich)
	command -v srun >/dev/null 2>&1 || want+=(slurm-wlm)
	command -v munged >/dev/null 2>&1 || want+=(munge)
	# fmpirun -hosts and mpiexec -hosts across network namespaces
	# (internal/netnstest) need an sshd in each.
	[ -x /usr/sbin/sshd ] || want+=(openssh-server)
	if [ ${#want[@]} -gt 0 ]; then
		echo "engines: installing ${want[*]}"
		as_root apt-get update -qq
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}" >/dev/null
	fi
}

# start_slurm starts munged and a one-node cluster; it returns non-zero with
# the reason on stderr when it cannot.
start_slurm() {
	if [ "$(id -u)" != 0 ]; then
		echo "engines: Slurm's daemons are started as root here; not root" >&2
		return 1
	fi
	for c in munged slurmctld slurmd sinfo srun; do
		command -v $c >/dev/null 2>&1 || {
			echo "engines: $c is not installed" >&2
			return 1
		}
	done
	stop_slurm 2>/dev/null || true
	mkdir -p "$SLURM_DIR"/{state,spool}
	# munge: a fresh key, the daemon as the munge user.
	install -d -m 700 -o munge -g munge /etc/munge
	install -d -m 755 -o munge -g munge /run/munge /var/log/munge /var/lib/munge
	if [ ! -s /etc/munge/munge.key ]; then
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 400 /etc/munge/munge.key
	runuser -u munge -- munged --force || {
		echo "engines: munged did not start" >&2
		return 1
	}
	local host cpus mem
	host=$(hostname -s)
	cpus=$(nproc)
	mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
	cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=fibermpi
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=fibermpi Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
	export SLURM_CONF="$SLURM_DIR/slurm.conf"
	slurmctld -c -f "$SLURM_CONF" || {
		echo "engines: slurmctld did not start; $SLURM_DIR/slurmctld.log says:" >&2
		tail -5 "$SLURM_DIR/slurmctld.log" >&2 || true
		return 1
	}
	slurmd -f "$SLURM_CONF" || {
		echo "engines: slurmd did not start; $SLURM_DIR/slurmd.log says:" >&2
		tail -5 "$SLURM_DIR/slurmd.log" >&2 || true
		return 1
	}
	for _ in $(seq 60); do
		if sinfo -h -o %T 2>/dev/null | grep -Eq 'idle|mix'; then
			echo "engines: Slurm node $host is idle (SLURM_CONF=$SLURM_CONF)"
			return 0
		fi
		sleep 0.5
	done
	echo "engines: the Slurm node did not become idle in 30 s: sinfo says $(sinfo -h -o '%T %E' 2>&1 | head -1)" >&2
	return 1
}

stop_slurm() {
	local f pid
	for f in "$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid" /run/munge/munged.pid; do
		[ -s "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		rm -f "$f"
	done
}

case "${1:-test}" in
install) install_engines ;;
start)
	start_slurm
	echo "export SLURM_CONF=$SLURM_DIR/slurm.conf"
	;;
stop) stop_slurm ;;
test)
	install_engines
	required=hydra
	if start_slurm; then
		required=hydra,slurm
		trap stop_slurm EXIT
	else
		echo "engines: Slurm cannot run here (reason above): srun's tests are skipped" >&2
	fi
	FIBERMPI_ENGINES_REQUIRED=$required $GO test $GOTESTFLAGS -timeout 10m ./internal/enginetest/ ./bootstrap/
	# Launch across hosts through ssh: fmpirun -hosts and mpiexec -hosts
	# on two network namespaces, an sshd in each (skipped with the reason
	# where namespaces cannot be made).
	FIBERMPI_ENGINES_REQUIRED=$required,ssh $GO test $GOTESTFLAGS -timeout 5m -run 'TestSSHLaunch|TestHydraHosts' ./internal/netnstest/
	;;
*)
	echo "usage: $0 [test|install|start|stop]" >&2
	exit 2
	;;
esac
