package contain

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		dir, p, rel string
		ok          bool
	}{
		{"/s/t/acme", "/s/t/acme", ".", true},
		{"/s/t/acme", "/s/t/acme/ws", "ws", true},
		{"/s/t/acme/", "/s/t/acme/ws/../ws2", "ws2", true},
		{"/s/t/acme", "/s/t/acme2", "", false},
		{"/s/t/acme", "/s/t/acme/../beta", "", false},
		{"/s/t/acme", "/s/t", "", false},
		{"/s/t/acme", "/s/t/acme/..data", "..data", true},
		{"/", "/etc", "etc", true},
		{"/s/t/acme", "ws", "", false},
		{"ws", "/s/t/acme/ws", "", false},
		{"a", "a/b", "b", true},
	} {
		rel, ok := Within(tc.dir, tc.p)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("Within(%q, %q) = %q, %v; want %q, %v", tc.dir, tc.p, rel, ok, tc.rel, tc.ok)
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"/s/a", "/s/a", true},
		{"/s/a", "/s/a/b", true},
		{"/s/a/b", "/s/a", true},
		{"/s/a", "/s/ab", false},
		{"/s/a", "/s/b", false},
	} {
		if got := Overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// tree builds tenants/acme and tenants/beta with the links an attacker
// would plant inside acme.
func tree(t testing.TB) (acme, beta string) {
	t.Helper()
	base := t.TempDir()
	acme = filepath.Join(base, "tenants", "acme")
	beta = filepath.Join(base, "tenants", "beta")
	for _, d := range []string{filepath.Join(acme, "ws", "notes"), filepath.Join(beta, "workspace")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"bws":         "../beta/workspace",
		"ws/out":      "../../beta",
		"ws/in":       "notes",
		"ws/abs":      beta,
		"ws/dangling": "../nowhere/yet",
		"ws/loop":     "loop",
		"ws/root":     "/",
	} {
		if err := os.Symlink(target, filepath.Join(acme, link)); err != nil {
			t.Fatal(err)
		}
	}
	return acme, beta
}

func TestResolved(t *testing.T) {
	acme, _ := tree(t)
	realAcme, err := filepath.EvalSymlinks(acme)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p       string
		want    string // the real path relative to acme, for accepted paths
		outside bool   // an *OutsideError (else some other error) for refused ones
	}{
		{p: ".", want: "."},
		{p: "ws", want: "ws"},
		{p: "ws/notes/new/deeper", want: "ws/notes/new/deeper"},
		{p: "ws/in", want: "ws/notes"},
		{p: "ws/in/x", want: "ws/notes/x"},
		{p: "bws", outside: true},
		{p: "bws/file", outside: true},
		{p: "ws/out", outside: true},
		{p: "ws/out/workspace/new", outside: true},
		{p: "ws/abs", outside: true},
		{p: "ws/root/etc", outside: true},
		{p: "../beta", outside: true},
		{p: "ws/dangling"},
		{p: "ws/dangling/x"},
		{p: "ws/loop"},
	} {
		t.Run(tc.p, func(t *testing.T) {
			got, err := Resolved(acme, filepath.Join(acme, tc.p))
			var oe *OutsideError
			switch {
			case tc.want != "":
				if err != nil || got != filepath.Join(realAcme, tc.want) {
					t.Errorf("Resolved = %q, %v; want %q", got, err, filepath.Join(realAcme, tc.want))
				}
			case tc.outside:
				if !errors.As(err, &oe) {
					t.Errorf("Resolved = %q, %v; want an *OutsideError", got, err)
				}
			default:
				if err == nil || errors.As(err, &oe) {
					t.Errorf("Resolved = %q, %v; want a resolution error", got, err)
				}
			}
		})
	}
	if _, err := Resolved("rel", "/abs"); err == nil || !strings.Contains(err.Error(), "must be absolute") {
		t.Errorf("relative dir: %v", err)
	}
}

func TestReal(t *testing.T) {
	acme, beta := tree(t)
	realAcme, err := filepath.EvalSymlinks(acme)
	if err != nil {
		t.Fatal(err)
	}
	realBeta, err := filepath.EvalSymlinks(beta)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, want string // want "" for an error
	}{
		{filepath.Join(acme, "ws", "in", "new"), filepath.Join(realAcme, "ws", "notes", "new")},
		{filepath.Join(acme, "bws", "x", "y"), filepath.Join(realBeta, "workspace", "x", "y")},
		{filepath.Join(acme, "ws", "out", "workspace", "new"), filepath.Join(realBeta, "workspace", "new")},
		{acme, realAcme},
		{filepath.Join(acme, "ws", "dangling"), ""},
		{filepath.Join(acme, "ws", "loop", "x"), ""},
	} {
		got, err := Real(tc.p)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Real(%q) = %q; want an error", tc.p, got)
			}
			continue
		}
		if err != nil || got != filepath.Clean(tc.want) {
			t.Errorf("Real(%q) = %q, %v; want %q", tc.p, got, err, filepath.Clean(tc.want))
		}
	}
}

// FuzzWithin: what Within accepts joins back to the path and never climbs.
func FuzzWithin(f *testing.F) {
	for _, s := range [][2]string{{"/s/t/acme", "/s/t/acme/ws"}, {"/s", "/s/../x"}, {"a", "a/../../b"}, {"/", "/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, dir, p string) {
		rel, ok := Within(dir, p)
		if !ok {
			return
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("Within(%q, %q) = %q: climbs out", dir, p, rel)
		}
		if filepath.Join(filepath.Clean(dir), rel) != filepath.Clean(p) {
			t.Fatalf("Within(%q, %q) = %q: does not join back", dir, p, rel)
		}
	})
}

// FuzzResolved walks fuzzed relative paths through a tree full of links
// that lead out: whatever Resolved accepts is really inside acme, by the
// kernel's own resolution (os.Stat of the real path's parent).
func FuzzResolved(f *testing.F) {
	for _, s := range []string{"ws", "bws/x", "ws/out/..", "ws/in/../../bws", "ws/./in/x", "../acme/ws", "ws/root/tmp"} {
		f.Add(s)
	}
	acme, _ := tree(f)
	realAcme, err := filepath.EvalSymlinks(acme)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.IndexByte(rel, 0) >= 0 {
			return
		}
		got, err := Resolved(acme, filepath.Join(acme, rel))
		if err != nil {
			return
		}
		if _, ok := Within(realAcme, got); !ok {
			t.Fatalf("Resolved(%q) = %q, outside %q", rel, got, realAcme)
		}
		// The deepest existing ancestor, resolved by the kernel, is inside.
		for p := filepath.Join(acme, rel); ; p = filepath.Dir(p) {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				if _, ok := Within(realAcme, real); !ok {
					t.Fatalf("Resolved(%q) accepted, but %s leads to %s", rel, p, real)
				}
				return
			}
		}
	})
}
