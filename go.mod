module github.com/fibermpi/fibermpi

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)
