package rdmatest_test

import (
	"fmt"

	"github.com/fibermpi/fibermpi/rdma"
	"github.com/fibermpi/fibermpi/rdma/inproc"
	"github.com/fibermpi/fibermpi/rdma/rdmatest"
)

// An in-process transport hosts every endpoint itself: its Factory returns
// the same transport for each address. A backend's test passes such a
// Factory to Run (see the package documentation).
func ExampleSingleHost() {
	factory := func(endpoints int) rdmatest.Fabric {
		return rdmatest.SingleHost(inproc.New(), endpoints)
	}
	fab := factory(3)
	fmt.Println(len(fab.Hosts), fab.Hosts[0] == fab.Hosts[2], fab.Hosts[1].Name())
	// Output: 3 true inproc
}

// HideLocal keeps a transport's methods but not its other interfaces.
func ExampleHideLocal() {
	tr := inproc.New()
	_, local := any(tr).(rdma.Local)
	_, stillLocal := rdmatest.HideLocal(tr).(rdma.Local)
	fmt.Println(local, stillLocal, rdmatest.HideLocal(tr).Name())
	// Output: true false inproc
}
