package talon_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoCgoDependency fails when a package outside the standard library
// that talon imports uses cgo. Such a package makes `go build` link with
// the system linker, and this machine's kernel then keeps the binary in
// the page cache as 2 MB folios and maps each whole: ≈ 10 MB more idle RSS
// (docs/benchmarks-history.md, "Idle memory fixed"). The standard
// library's cgo (net, os/user) links internally and is fine.
func TestNoCgoDependency(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if and (not .Standard) .CgoFiles}}{{.ImportPath}}{{end}}", "./cmd/talon")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if pkgs := strings.Fields(string(out)); len(pkgs) > 0 {
		t.Fatalf("talon imports cgo outside the standard library, which forces external linking: %v (see `go mod why -m` for each)", pkgs)
	}
}
