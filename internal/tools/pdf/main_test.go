package pdf

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"

	"talon/internal/sandbox/bwrap"
)

// TestMain lets the test binary serve as the extraction child, as the
// talon binary does for `talon internal pdf-text`: the tool starts
// os.Executable() with ChildArgs, so every tool test runs the real child.
// With probeEnv set, the child instead confines itself and reports what
// it may still do (TestChildConfined).
func TestMain(m *testing.M) {
	if IsChild(os.Args[1:]) {
		if os.Getenv(probeEnv) != "" {
			os.Exit(probe())
		}
		os.Exit(ServeChild(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const probeEnv = "TALON_PDF_TEST_PROBE"

// probe confines itself as ServeChild does, then tries to open a file and
// prints the outcome and its limits.
func probe() int {
	runtime.LockOSThread()
	if err := confine(1, 256<<20); err != nil {
		fmt.Println("confine:", err)
		return 1
	}
	abi, _ := (&bwrap.Backend{}).Landlock()
	fmt.Println("abi", abi)
	if f, err := os.Open("/etc/hostname"); err != nil {
		fmt.Println("open:", err)
	} else {
		f.Close()
		fmt.Println("open: allowed")
	}
	for _, r := range []struct {
		name string
		res  int
	}{{"cpu", syscall.RLIMIT_CPU}, {"fsize", syscall.RLIMIT_FSIZE}, {"core", syscall.RLIMIT_CORE}} {
		var l syscall.Rlimit
		syscall.Getrlimit(r.res, &l)
		fmt.Printf("%s %d %d\n", r.name, l.Cur, l.Max)
	}
	return 0
}
