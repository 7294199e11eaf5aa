package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestWarmFlagsRefused: the bounds of open tenants refuse what would
// make no sense, on both commands that run a gateway, before anything
// starts.
func TestWarmFlagsRefused(t *testing.T) {
	for _, cmd := range []string{"serve", "gateway"} {
		for _, tc := range []struct{ flag, value, want string }{
			{"--tenant-idle", "-1s", "--tenant-idle -1s: want 0"},
			{"--tenant-idle", "soon", `invalid argument "soon" for "--tenant-idle"`},
			{"--max-warm-tenants", "-3", "--max-warm-tenants -3: want 0"},
		} {
			t.Run(cmd+" "+tc.flag+" "+tc.value, func(t *testing.T) {
				var out, errOut bytes.Buffer
				code := run([]string{cmd, "--state-dir", t.TempDir(), "--port", "1", tc.flag, tc.value}, strings.NewReader(""), &out, &errOut)
				if code == 0 || !strings.Contains(errOut.String(), tc.want) {
					t.Errorf("exit %d, stderr %q; want a failure saying %q", code, errOut.String(), tc.want)
				}
			})
		}
	}
}
