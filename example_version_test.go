package fibermpi_test

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fibermpi/fibermpi"
)

// A command's -version flag, as fmpirun's and fmpi-osu's: the line names the
// release and what the toolchain recorded of the build.
func ExamplePrintVersion() {
	fs := flag.NewFlagSet("mytool", flag.ContinueOnError)
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse([]string{"-version"}); err != nil {
		fmt.Println(err)
		return
	}
	if *version {
		if err := fibermpi.PrintVersion(os.Stdout, "mytool"); err != nil {
			fmt.Println(err)
		}
	}
}

// VersionInfo begins with Version; what follows depends on how the binary
// was built (a test binary records no module version of its own).
func ExampleVersionInfo() {
	info := fibermpi.VersionInfo()
	fmt.Println(strings.HasPrefix(info, "fibermpi "+fibermpi.Version))
	// Output: true
}
