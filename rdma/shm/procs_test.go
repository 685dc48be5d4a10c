package shm_test

// childEnv names the role of a child process of the multi-process tests.
const childEnv = "FIBERMPI_SHM_TEST_CHILD"

func runChild(role string) int { return 2 }
