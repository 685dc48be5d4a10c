package bootstrap

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The variables torchrun (and the launchers that copy it) give each
// process.
const (
	EnvTorchRank       = "RANK"
	EnvTorchWorldSize  = "WORLD_SIZE"
	EnvTorchLocalRank  = "LOCAL_RANK"
	EnvTorchLocalSize  = "LOCAL_WORLD_SIZE"
	EnvTorchMasterAddr = "MASTER_ADDR"
	EnvTorchMasterPort = "MASTER_PORT"
	EnvTorchRunID      = "TORCHELASTIC_RUN_ID"
)

// EnvStorePort overrides the port of rank 0's store under torchrun's
// variables (MASTER_PORT+1 by default) and plain srun (a port derived from
// the job and step ids).
const EnvStorePort = "FIBERMPI_STORE_PORT"

var torchVars = [...]string{EnvTorchRank, EnvTorchWorldSize, EnvTorchLocalRank}

func torchClaims(env lookupFunc) bool {
	for _, v := range torchVars {
		if _, ok := env(v); ok {
			return true
		}
	}
	return false
}

// openTorchrun joins a job described by torchrun's variables: RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT are required, LOCAL_RANK and
// LOCAL_WORLD_SIZE are checked when set. Rank 0 serves the job's store on
// MASTER_ADDR at MASTER_PORT+1 (torch's own TCPStore may hold MASTER_PORT),
// or at FIBERMPI_STORE_PORT.
func openTorchrun(env lookupFunc) (Bootstrap, error) {
	vals := map[string]string{}
	var missing, set []string
	for _, v := range []string{EnvTorchRank, EnvTorchWorldSize, EnvTorchMasterAddr, EnvTorchMasterPort} {
		if x, ok := env(v); ok && x != "" {
			vals[v] = x
			set = append(set, fmt.Sprintf("%s=%q", v, x))
		} else {
			missing = append(missing, v)
		}
	}
	size, err := strconv.Atoi(vals[EnvTorchWorldSize])
	if _, ok := vals[EnvTorchWorldSize]; ok && (err != nil || size < 1) {
		return nil, fmt.Errorf("%w: %s=%q is not a job size (a positive integer)", ErrEnvironment, EnvTorchWorldSize, vals[EnvTorchWorldSize])
	}
	if len(missing) > 0 && !(size == 1 && vals[EnvTorchRank] == "0") {
		have := "none of the others is set"
		if len(set) > 0 {
			have = strings.Join(set, ", ") + " set"
		}
		return nil, fmt.Errorf("%w: torchrun's environment is incomplete: %s not set (%s)", ErrEnvironment, strings.Join(missing, ", "), have)
	}
	rank, err := strconv.Atoi(vals[EnvTorchRank])
	if err != nil || rank < 0 || rank >= size {
		return nil, fmt.Errorf("%w: %s=%q is not a rank below %s=%d", ErrEnvironment, EnvTorchRank, vals[EnvTorchRank], EnvTorchWorldSize, size)
	}
	lr, hasLR := env(EnvTorchLocalRank)
	ls, hasLS := env(EnvTorchLocalSize)
	localSize := size
	if hasLS {
		n, err := strconv.Atoi(ls)
		if err != nil || n < 1 || n > size {
			return nil, fmt.Errorf("%w: %s=%q is not a size between 1 and %s=%d", ErrEnvironment, EnvTorchLocalSize, ls, EnvTorchWorldSize, size)
		}
		localSize = n
	}
	if hasLR {
		n, err := strconv.Atoi(lr)
		if err != nil || n < 0 || n >= localSize || n > rank {
			return nil, fmt.Errorf("%w: %s=%q is not a local rank below %d and at most %s=%d", ErrEnvironment, EnvTorchLocalRank, lr, localSize, EnvTorchRank, rank)
		}
	}
	if size == 1 {
		return Single(), nil
	}
	port, err := strconv.Atoi(vals[EnvTorchMasterPort])
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("%w: %s=%q is not a TCP port", ErrEnvironment, EnvTorchMasterPort, vals[EnvTorchMasterPort])
	}
	storePort := port + 1
	if port == 65535 {
		storePort = port - 1
	}
	if sp, ok := env(EnvStorePort); ok && sp != "" {
		if storePort, err = strconv.Atoi(sp); err != nil || storePort < 1 || storePort > 65535 {
			return nil, fmt.Errorf("%w: %s=%q is not a TCP port", ErrEnvironment, EnvStorePort, sp)
		}
	}
	runID, _ := env(EnvTorchRunID)
	key := jobKey("torchrun", vals[EnvTorchMasterAddr], vals[EnvTorchMasterPort], vals[EnvTorchWorldSize], runID)
	addr := net.JoinHostPort(vals[EnvTorchMasterAddr], strconv.Itoa(storePort))
	vars := fmt.Sprintf("%s=%s %s=%s, store port %d", EnvTorchMasterAddr, vals[EnvTorchMasterAddr], EnvTorchMasterPort, vals[EnvTorchMasterPort], storePort)
	return openStoreJob("torchrun", rank, size, addr, key, vars)
}

// jobKey is what every process of one job computes alike from its
// environment, to tell jobs sharing a store port apart.
func jobKey(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return parts[0] + "-" + hex.EncodeToString(sum[:8])
}
