package gateway

import (
	"os"
	"testing"

	"talon/internal/tools/pdf"
)

// TestMain lets the test binary serve as the pdf tool's extraction child
// (`talon internal pdf-text` in the real binary), so that the pdf tool runs
// its real child here too.
func TestMain(m *testing.M) {
	if pdf.IsChild(os.Args[1:]) {
		os.Exit(pdf.ServeChild(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
