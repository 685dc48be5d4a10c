package bootstrap

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The variables srun gives each task (those this package reads).
const (
	EnvSlurmProcID    = "SLURM_PROCID"
	EnvSlurmStepTasks = "SLURM_STEP_NUM_TASKS"
	EnvSlurmLocalID   = "SLURM_LOCALID"
	EnvSlurmJobID     = "SLURM_JOB_ID"
	EnvSlurmStepID    = "SLURM_STEP_ID"
	EnvSlurmNodeList  = "SLURM_STEP_NODELIST"
)

// slurmClaims claims a task of srun: SLURM_STEP_NUM_TASKS is set by srun
// for the tasks of a step, not in a batch script. Under srun --mpi=pmi2 the
// pmi2 row claims the process first.
func slurmClaims(env lookupFunc) bool {
	_, ok := env(EnvSlurmStepTasks)
	return ok
}

// openSlurm joins a task of plain srun (without a PMI plugin): srun offers
// no exchange, so rank 0 serves the job's store on the first node of the
// step (where srun places task 0), on a port derived from the job and step
// ids, or FIBERMPI_STORE_PORT.
func openSlurm(env lookupFunc) (Bootstrap, error) {
	vals := map[string]string{}
	var missing []string
	for _, v := range []string{EnvSlurmProcID, EnvSlurmStepTasks, EnvSlurmJobID, EnvSlurmStepID, EnvSlurmNodeList} {
		if x, ok := env(v); ok && x != "" {
			vals[v] = x
		} else {
			missing = append(missing, v)
		}
	}
	size, err := strconv.Atoi(vals[EnvSlurmStepTasks])
	if err != nil || size < 1 {
		return nil, fmt.Errorf("%w: %s=%q is not a number of tasks", ErrEnvironment, EnvSlurmStepTasks, vals[EnvSlurmStepTasks])
	}
	rank, err := strconv.Atoi(vals[EnvSlurmProcID])
	if err != nil || rank < 0 || rank >= size {
		return nil, fmt.Errorf("%w: %s=%q is not a rank below %s=%d", ErrEnvironment, EnvSlurmProcID, vals[EnvSlurmProcID], EnvSlurmStepTasks, size)
	}
	if size == 1 {
		return Single(), nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: srun's environment is incomplete: %s not set", ErrEnvironment, strings.Join(missing, ", "))
	}
	host, err := firstHost(vals[EnvSlurmNodeList])
	if err != nil {
		return nil, fmt.Errorf("%w: %s=%q: %v", ErrEnvironment, EnvSlurmNodeList, vals[EnvSlurmNodeList], err)
	}
	job, _ := strconv.ParseUint(vals[EnvSlurmJobID], 10, 64)
	step, _ := strconv.ParseUint(vals[EnvSlurmStepID], 10, 64)
	port := slurmStorePort(job, step)
	if sp, ok := env(EnvStorePort); ok && sp != "" {
		if port, err = strconv.Atoi(sp); err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%w: %s=%q is not a TCP port", ErrEnvironment, EnvStorePort, sp)
		}
	}
	key := jobKey("slurm", vals[EnvSlurmJobID], vals[EnvSlurmStepID], vals[EnvSlurmStepTasks])
	vars := fmt.Sprintf("%s=%s %s=%s %s=%s, store port %d", EnvSlurmJobID, vals[EnvSlurmJobID], EnvSlurmStepID, vals[EnvSlurmStepID], EnvSlurmNodeList, vals[EnvSlurmNodeList], port)
	return openStoreJob("slurm", rank, size, net.JoinHostPort(host, strconv.Itoa(port)), key, vars)
}

// slurmStorePort derives the store's port from the job and step ids: in
// [10000, 30000), below Linux's default range of ephemeral ports
// (32768–60999), so that an outgoing connection of the node cannot be
// holding it (a port derived into that range was once taken by one).
func slurmStorePort(job, step uint64) int {
	return 10000 + int((job*131+step)%20000)
}

// firstHost returns the first host of a Slurm host list such as
// "node[03-05,9],login1" (node03).
func firstHost(list string) (string, error) {
	end := len(list)
	if i := strings.IndexAny(list, ",["); i >= 0 {
		end = i
	}
	prefix := list[:end]
	if end < len(list) && list[end] == '[' {
		inner := list[end+1:]
		j := strings.IndexByte(inner, ']')
		if j < 0 {
			return "", fmt.Errorf("unclosed '[' in the host list")
		}
		first := inner[:j]
		if k := strings.IndexAny(first, ",-"); k >= 0 {
			first = first[:k]
		}
		rest := inner[j+1:]
		if k := strings.IndexByte(rest, ','); k >= 0 {
			rest = rest[:k]
		}
		prefix += first + rest
	}
	if prefix == "" {
		return "", fmt.Errorf("no host")
	}
	return prefix, nil
}
