package config

import (
	"strings"
	"testing"
)

// TestPDFLimits: agents.defaults.pdfMaxMb and pdfMaxPages decode, take
// OpenClaw's defaults when unset, and are refused outside Talon's bounds
// with an error naming the key.
func TestPDFLimits(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		wantBytes int64
		wantPages int
		err       string // in the validation error
	}{
		{"unset", `{}`, 10 << 20, 20, ""},
		{"set", `{agents:{defaults:{pdfMaxMb:2.5,pdfMaxPages:7}}}`, 5 << 19, 7, ""},
		{"pages floored", `{agents:{defaults:{pdfMaxPages:3.9}}}`, 10 << 20, 3, ""},
		{"at the ceiling", `{agents:{defaults:{pdfMaxMb:50,pdfMaxPages:200}}}`, 50 << 20, 200, ""},
		{"zero megabytes", `{agents:{defaults:{pdfMaxMb:0}}}`, 0, 0, "agents.defaults.pdfMaxMb: expected a number of megabytes above 0 and at most 50 (got 0)"},
		{"above the ceiling", `{agents:{defaults:{pdfMaxMb:51}}}`, 0, 0, "agents.defaults.pdfMaxMb"},
		{"zero pages", `{agents:{defaults:{pdfMaxPages:0.5}}}`, 0, 0, "agents.defaults.pdfMaxPages: expected a number of pages from 1 to 200"},
		{"too many pages", `{agents:{defaults:{pdfMaxPages:201}}}`, 0, 0, "agents.defaults.pdfMaxPages"},
		{"not a number", `{agents:{defaults:{pdfMaxMb:"10"}}}`, 0, 0, "agents.defaults.pdfMaxMb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("test.json", []byte(c.src))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := &f.Config.Agents.Defaults
			if got := d.PDFMaxBytes(); got != c.wantBytes {
				t.Errorf("PDFMaxBytes = %d, want %d", got, c.wantBytes)
			}
			if got := d.PDFMaxPageCount(); got != c.wantPages {
				t.Errorf("PDFMaxPageCount = %d, want %d", got, c.wantPages)
			}
		})
	}
}
