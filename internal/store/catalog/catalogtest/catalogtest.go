// Package catalogtest is the conformance suite every catalog.Store passes:
// CRUD, ordering, not-found, the database-enforced constraints, and
// concurrent installs of one pair. Run calls open once per case, so each
// case gets a fresh, empty store; the cases run one after another.
package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/store/catalog"
)

// Run runs the suite against the stores open returns.
func Run(t *testing.T, open func(t *testing.T) catalog.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s catalog.Store)
	}{
		{"library", testLibrary},
		{"tenants", testTenants},
		{"installations", testInstallations},
		{"shipped files", testShippedFiles},
		{"constraints", testConstraints},
		{"invalid", testInvalid},
		{"concurrent installs", testConcurrentInstalls},
		{"nodes and placements", testNodes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("closing store: %v", err)
				}
			})
			c.fn(t, s)
		})
	}
}

// at is a fixed time with sub-millisecond digits that stores drop.
func at(minute int) time.Time {
	return time.Date(2026, 3, 13, 10, minute, 0, 123_456_789, time.FixedZone("X", 3600))
}

// ms is what a store gives back for t.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func entry(slug string) catalog.Entry {
	return catalog.Entry{
		Slug: slug, Name: "Name of " + slug, Description: "does " + slug, Emoji: "🔬", Category: "research",
		DefaultModel: "anthropic/claude-sonnet-4", Skills: []string{"web", "memory"}, Public: true,
		TemplateVersion: "1", TemplateHash: "sha256:" + slug, UpdatedAt: at(1),
	}
}

func must(t *testing.T, step string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

func wantErr(t *testing.T, step string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", step, err, want)
	}
}

func testLibrary(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	lib, err := s.Library(ctx)
	must(t, "listing empty library", err)
	if len(lib) != 0 {
		t.Fatalf("empty store's library: %v", lib)
	}
	for _, slug := range []string{"writer", "coder", "researcher"} {
		must(t, "putting "+slug, s.PutLibrary(ctx, entry(slug)))
	}
	bare := catalog.Entry{Slug: "bare", Name: "Bare"} // nil skills, zero time
	must(t, "putting bare", s.PutLibrary(ctx, bare))

	got, err := s.LibraryEntry(ctx, "coder")
	must(t, "reading coder", err)
	want := entry("coder")
	want.UpdatedAt = ms(want.UpdatedAt)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("coder round trip (-want +got):\n%s", d)
	}
	got, err = s.LibraryEntry(ctx, "bare")
	must(t, "reading bare", err)
	if got.Skills == nil || len(got.Skills) != 0 || got.UpdatedAt.IsZero() || got.Public {
		t.Errorf("bare entry read back as %+v: want empty non-nil skills, a stamped time, not public", got)
	}

	// Put again replaces every field.
	changed := entry("coder")
	changed.Name, changed.Skills, changed.Public, changed.TemplateHash, changed.UpdatedAt = "Coder 2", []string{"exec"}, false, "sha256:new", at(2)
	must(t, "replacing coder", s.PutLibrary(ctx, changed))
	got, err = s.LibraryEntry(ctx, "coder")
	must(t, "reading replaced coder", err)
	changed.UpdatedAt = ms(changed.UpdatedAt)
	if d := cmp.Diff(changed, got); d != "" {
		t.Errorf("replaced coder (-want +got):\n%s", d)
	}

	lib, err = s.Library(ctx)
	must(t, "listing library", err)
	var slugs []string
	for _, e := range lib {
		slugs = append(slugs, e.Slug)
	}
	if d := cmp.Diff([]string{"bare", "coder", "researcher", "writer"}, slugs); d != "" {
		t.Errorf("library order (-want +got):\n%s", d)
	}

	must(t, "deleting writer", s.DeleteLibrary(ctx, "writer"))
	_, err = s.LibraryEntry(ctx, "writer")
	wantErr(t, "reading deleted writer", err, catalog.ErrNotFound)
	wantErr(t, "deleting writer twice", s.DeleteLibrary(ctx, "writer"), catalog.ErrNotFound)
	_, err = s.LibraryEntry(ctx, "nobody")
	wantErr(t, "reading unknown slug", err, catalog.ErrNotFound)
}

func testTenants(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	for i, id := range []string{"zeta", "Acme_1", "beta-co"} {
		must(t, "putting "+id, s.PutTenant(ctx, catalog.Tenant{ID: id, Name: "Tenant " + id, Created: at(i)}))
	}
	// Renaming keeps the creation time.
	must(t, "renaming beta-co", s.PutTenant(ctx, catalog.Tenant{ID: "beta-co", Name: "Beta", Created: at(30)}))
	got, err := s.Tenants(ctx)
	must(t, "listing tenants", err)
	want := []catalog.Tenant{
		{ID: "Acme_1", Name: "Tenant Acme_1", Created: ms(at(1))},
		{ID: "beta-co", Name: "Beta", Created: ms(at(2))},
		{ID: "zeta", Name: "Tenant zeta", Created: ms(at(0))},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tenants (-want +got):\n%s", d)
	}
	must(t, "deleting zeta", s.DeleteTenant(ctx, "zeta"))
	wantErr(t, "deleting zeta twice", s.DeleteTenant(ctx, "zeta"), catalog.ErrNotFound)
	got, err = s.Tenants(ctx)
	must(t, "listing tenants after delete", err)
	if len(got) != 2 {
		t.Errorf("tenants after deleting zeta: %v", got)
	}
}

// seed puts tenants t1, t2 and entries a, b.
func seed(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	for _, id := range []string{"t2", "t1"} {
		must(t, "putting tenant "+id, s.PutTenant(ctx, catalog.Tenant{ID: id, Name: id}))
	}
	for _, slug := range []string{"b", "a"} {
		must(t, "putting entry "+slug, s.PutLibrary(ctx, entry(slug)))
	}
}

func slugsOf(ins []catalog.Installation) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.TenantID+"/"+in.Slug)
	}
	return out
}

func testInstallations(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	seed(t, s)
	for _, p := range [][2]string{{"t2", "a"}, {"t1", "b"}, {"t1", "a"}} {
		must(t, "installing "+p[1]+" for "+p[0], s.Install(ctx, catalog.Installation{TenantID: p[0], Slug: p[1], TemplateHash: "h1", InstalledAt: at(5)}))
	}
	for _, c := range []struct {
		f    catalog.Filter
		want []string
	}{
		{catalog.Filter{}, []string{"t1/a", "t1/b", "t2/a"}},
		{catalog.Filter{TenantID: "t1"}, []string{"t1/a", "t1/b"}},
		{catalog.Filter{Slug: "a"}, []string{"t1/a", "t2/a"}},
		{catalog.Filter{TenantID: "t2", Slug: "a"}, []string{"t2/a"}},
		{catalog.Filter{TenantID: "t2", Slug: "b"}, nil},
		{catalog.Filter{TenantID: "nobody"}, nil},
	} {
		got, err := s.Installations(ctx, c.f)
		must(t, fmt.Sprintf("listing %+v", c.f), err)
		if d := cmp.Diff(c.want, slugsOf(got)); d != "" {
			t.Errorf("installations %+v (-want +got):\n%s", c.f, d)
		}
	}

	got, err := s.Installations(ctx, catalog.Filter{TenantID: "t1", Slug: "a"})
	must(t, "reading t1/a", err)
	want := []catalog.Installation{{TenantID: "t1", Slug: "a", TemplateHash: "h1", InstalledAt: ms(at(5)), UpdatedAt: ms(at(5)), Status: catalog.StatusOK}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("new installation (-want +got):\n%s", d)
	}

	// An update keeps the installation time when none is given.
	upd := catalog.Installation{TenantID: "t1", Slug: "a", TemplateHash: "h2", UpdatedAt: at(9), Status: catalog.StatusError, Message: "plugin image-gen is not enabled"}
	must(t, "updating t1/a", s.UpdateInstallation(ctx, upd))
	got, err = s.Installations(ctx, catalog.Filter{TenantID: "t1", Slug: "a"})
	must(t, "reading updated t1/a", err)
	want = []catalog.Installation{{TenantID: "t1", Slug: "a", TemplateHash: "h2", InstalledAt: ms(at(5)), UpdatedAt: ms(at(9)), Status: catalog.StatusError, Message: upd.Message}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("updated installation (-want +got):\n%s", d)
	}
	wantErr(t, "updating t2/b (not installed)",
		s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t2", Slug: "b"}), catalog.ErrNotFound)

	must(t, "uninstalling t1/b", s.Uninstall(ctx, "t1", "b"))
	wantErr(t, "uninstalling t1/b twice", s.Uninstall(ctx, "t1", "b"), catalog.ErrNotFound)
	// Installing again after uninstalling works.
	must(t, "reinstalling t1/b", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "b"}))

	// Deleting a tenant deletes its installations.
	must(t, "deleting t1", s.DeleteTenant(ctx, "t1"))
	all, err := s.Installations(ctx, catalog.Filter{})
	must(t, "listing after deleting t1", err)
	if d := cmp.Diff([]string{"t2/a"}, slugsOf(all)); d != "" {
		t.Errorf("installations after deleting t1 (-want +got):\n%s", d)
	}
}

// sum is a valid SHA-256 in hex made of one repeated digit.
func sum(d byte) string { return strings.Repeat(string(d), 64) }

func filesOf(t *testing.T, s catalog.Store, tenant, slug string) []catalog.ShippedFile {
	t.Helper()
	ins, err := s.Installations(context.Background(), catalog.Filter{TenantID: tenant, Slug: slug})
	must(t, "reading "+tenant+"/"+slug, err)
	if len(ins) != 1 {
		t.Fatalf("installations of %s/%s: %v", tenant, slug, slugsOf(ins))
	}
	return ins[0].Files
}

// testShippedFiles: an installation's record of shipped files is written
// with it, read back sorted by path (bytewise), kept by an update without
// one, replaced by an update with one, and goes with the installation.
func testShippedFiles(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	seed(t, s)
	files := []catalog.ShippedFile{
		{Path: "skills/b/SKILL.md", SHA256: sum('b')},
		{Path: "SOUL.md", SHA256: sum('1')},
		{Path: "AGENTS.md", SHA256: sum('a'), Exec: true},
		{Path: "skills/B/SKILL.md", SHA256: sum('c')},
	}
	must(t, "installing a with files", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Files: files}))
	must(t, "installing b without files", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "b"}))
	want := []catalog.ShippedFile{files[2], files[1], files[3], files[0]}
	if d := cmp.Diff(want, filesOf(t, s, "t1", "a")); d != "" {
		t.Errorf("files of t1/a (-want +got):\n%s", d)
	}
	if got := filesOf(t, s, "t1", "b"); got != nil {
		t.Errorf("files of t1/b, installed without a record: %v, want nil", got)
	}
	all, err := s.Installations(ctx, catalog.Filter{})
	must(t, "listing all", err)
	if len(all) != 2 || len(all[0].Files) != 4 || all[1].Files != nil {
		t.Errorf("listing all: %+v", all)
	}

	must(t, "updating t1/a without files", s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t1", Slug: "a", TemplateHash: "h2"}))
	if d := cmp.Diff(want, filesOf(t, s, "t1", "a")); d != "" {
		t.Errorf("files after an update without a record (-want +got):\n%s", d)
	}
	next := []catalog.ShippedFile{{Path: "AGENTS.md", SHA256: sum('d')}}
	must(t, "updating t1/a with files", s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Files: next}))
	must(t, "recording t1/b's first files", s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t1", Slug: "b", Files: next}))
	for _, slug := range []string{"a", "b"} {
		if d := cmp.Diff(next, filesOf(t, s, "t1", slug)); d != "" {
			t.Errorf("files of t1/%s after the update (-want +got):\n%s", slug, d)
		}
	}

	for _, c := range []struct {
		name  string
		files []catalog.ShippedFile
	}{
		{"empty record", []catalog.ShippedFile{}},
		{"absolute path", []catalog.ShippedFile{{Path: "/etc/passwd", SHA256: sum('a')}}},
		{"dot-dot", []catalog.ShippedFile{{Path: "skills/../../x", SHA256: sum('a')}}},
		{"empty segment", []catalog.ShippedFile{{Path: "skills//x", SHA256: sum('a')}}},
		{"upper-case hash", []catalog.ShippedFile{{Path: "x", SHA256: strings.Repeat("A", 64)}}},
		{"short hash", []catalog.ShippedFile{{Path: "x", SHA256: "abc"}}},
		{"twice", []catalog.ShippedFile{{Path: "x", SHA256: sum('a')}, {Path: "x", SHA256: sum('b')}}},
	} {
		wantErr(t, c.name, s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Files: c.files}), catalog.ErrInvalid)
		wantErr(t, c.name+" (install)", s.Install(ctx, catalog.Installation{TenantID: "t2", Slug: "a", Files: c.files}), catalog.ErrInvalid)
	}
	if d := cmp.Diff(next, filesOf(t, s, "t1", "a")); d != "" {
		t.Errorf("files after refused updates (-want +got):\n%s", d)
	}

	// Uninstalling drops the record: a reinstall without one has none.
	must(t, "uninstalling t1/a", s.Uninstall(ctx, "t1", "a"))
	must(t, "reinstalling t1/a", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a"}))
	if got := filesOf(t, s, "t1", "a"); got != nil {
		t.Errorf("files after uninstall and reinstall: %v", got)
	}
	// Deleting the tenant drops its records; installing again starts clean.
	must(t, "deleting t1", s.DeleteTenant(ctx, "t1"))
	must(t, "putting t1 again", s.PutTenant(ctx, catalog.Tenant{ID: "t1", Name: "t1"}))
	must(t, "installing b for the new t1", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "b"}))
	if got := filesOf(t, s, "t1", "b"); got != nil {
		t.Errorf("files of a new tenant's installation: %v", got)
	}
}

func testConstraints(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	seed(t, s)
	must(t, "installing a for t1", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a"}))
	for _, c := range []struct {
		step string
		err  error
		want error
	}{
		{"installing a for t1 again", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a"}), catalog.ErrExists},
		{"installing for an unknown tenant", s.Install(ctx, catalog.Installation{TenantID: "t9", Slug: "a"}), catalog.ErrUnknownTenant},
		{"installing an unknown slug", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "zz"}), catalog.ErrUnknownEntry},
		{"installing unknown both", s.Install(ctx, catalog.Installation{TenantID: "t9", Slug: "zz"}), catalog.ErrUnknownTenant},
		{"deleting an installed entry", s.DeleteLibrary(ctx, "a"), catalog.ErrInUse},
		{"deleting an unknown tenant", s.DeleteTenant(ctx, "t9"), catalog.ErrNotFound},
		{"uninstalling a pair never installed", s.Uninstall(ctx, "t2", "b"), catalog.ErrNotFound},
	} {
		wantErr(t, c.step, c.err, c.want)
	}
	// The refused delete changed nothing; after uninstalling, it works.
	if _, err := s.LibraryEntry(ctx, "a"); err != nil {
		t.Errorf("entry a after refused delete: %v", err)
	}
	must(t, "uninstalling a from t1", s.Uninstall(ctx, "t1", "a"))
	must(t, "deleting a", s.DeleteLibrary(ctx, "a"))
}

func testInvalid(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	seed(t, s)
	long := string(make([]byte, 65))
	for _, c := range []struct {
		step string
		err  error
	}{
		{"empty slug", s.PutLibrary(ctx, catalog.Entry{Name: "x"})},
		{"upper-case slug", s.PutLibrary(ctx, catalog.Entry{Slug: "Coder", Name: "x"})},
		{"slug with a slash", s.PutLibrary(ctx, catalog.Entry{Slug: "a/b", Name: "x"})},
		{"slug starting with -", s.PutLibrary(ctx, catalog.Entry{Slug: "-a", Name: "x"})},
		{"slug of 65 bytes", s.PutLibrary(ctx, catalog.Entry{Slug: long, Name: "x"})},
		{"empty name", s.PutLibrary(ctx, catalog.Entry{Slug: "ok"})},
		{"empty skill", s.PutLibrary(ctx, catalog.Entry{Slug: "ok", Name: "x", Skills: []string{""}})},
		{"empty tenant id", s.PutTenant(ctx, catalog.Tenant{Name: "x"})},
		{"tenant id with a dot", s.PutTenant(ctx, catalog.Tenant{ID: "a.b"})},
		{"unknown status", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Status: "fine"})},
		{"error without message", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Status: catalog.StatusError})},
		{"ok with message", s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Message: "hm"})},
		{"update to error without message", s.UpdateInstallation(ctx, catalog.Installation{TenantID: "t1", Slug: "a", Status: catalog.StatusError})},
	} {
		wantErr(t, c.step, c.err, catalog.ErrInvalid)
	}
	if ins, err := s.Installations(ctx, catalog.Filter{}); err != nil || len(ins) != 0 {
		t.Errorf("installations after invalid writes: %v, %v", ins, err)
	}
}

func testConcurrentInstalls(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	seed(t, s)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Install(ctx, catalog.Installation{TenantID: "t1", Slug: "a", TemplateHash: fmt.Sprint(i)})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, catalog.ErrExists):
			t.Errorf("install %d: %v, want nil or ErrExists", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent installs of one pair succeeded, want exactly 1", won, n)
	}
	ins, err := s.Installations(ctx, catalog.Filter{})
	must(t, "listing", err)
	if len(ins) != 1 {
		t.Errorf("installations after concurrent installs: %v", slugsOf(ins))
	}
}

func testNodes(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	must(t, "putting node b", s.PutNode(ctx, catalog.Node{ID: "b", URL: "http://10.0.0.2:18789", Added: at(1)}))
	must(t, "putting node a", s.PutNode(ctx, catalog.Node{ID: "127.0.0.1:9", URL: "https://gw-a.example/", Added: at(2)}))
	// A new URL for a known id keeps its Added time.
	must(t, "moving node b", s.PutNode(ctx, catalog.Node{ID: "b", URL: "http://10.0.0.3:18789", Added: at(9)}))
	got, err := s.Nodes(ctx)
	must(t, "listing nodes", err)
	want := []catalog.Node{
		{ID: "127.0.0.1:9", URL: "https://gw-a.example/", Added: ms(at(2))},
		{ID: "b", URL: "http://10.0.0.3:18789", Added: ms(at(1))},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}

	for _, id := range []string{"t1", "t2", "t3"} {
		must(t, "putting tenant "+id, s.PutTenant(ctx, catalog.Tenant{ID: id}))
	}
	_, err = s.PlacementOf(ctx, "t1")
	wantErr(t, "placement of an unplaced tenant", err, catalog.ErrNotFound)
	must(t, "placing t1", s.Place(ctx, "t1", "b"))
	must(t, "placing t2", s.Place(ctx, "t2", "b"))
	must(t, "placing t3", s.Place(ctx, "t3", "127.0.0.1:9"))
	// Placing again moves the tenant.
	must(t, "moving t2", s.Place(ctx, "t2", "127.0.0.1:9"))
	wantErr(t, "placing on an unknown node", s.Place(ctx, "t1", "zz"), catalog.ErrUnknownNode)
	wantErr(t, "placing an unknown tenant", s.Place(ctx, "t9", "b"), catalog.ErrUnknownTenant)
	wantErr(t, "placing with a bad node id", s.Place(ctx, "t1", "../x"), catalog.ErrInvalid)

	node, err := s.PlacementOf(ctx, "t2")
	must(t, "placement of t2", err)
	if node != "127.0.0.1:9" {
		t.Errorf("t2 is on %q after its move, want 127.0.0.1:9", node)
	}
	list, err := s.Placements(ctx)
	must(t, "listing placements", err)
	wantList := []catalog.Placement{{TenantID: "t1", NodeID: "b"}, {TenantID: "t2", NodeID: "127.0.0.1:9"}, {TenantID: "t3", NodeID: "127.0.0.1:9"}}
	if d := cmp.Diff(wantList, list); d != "" {
		t.Errorf("placements (-want +got):\n%s", d)
	}
	counts, err := s.PlacedCounts(ctx)
	must(t, "counting placements", err)
	if d := cmp.Diff(map[string]int{"b": 1, "127.0.0.1:9": 2}, counts); d != "" {
		t.Errorf("placed counts (-want +got):\n%s", d)
	}

	wantErr(t, "deleting a node with tenants", s.DeleteNode(ctx, "b"), catalog.ErrInUse)
	must(t, "deleting t1", s.DeleteTenant(ctx, "t1"))
	_, err = s.PlacementOf(ctx, "t1")
	wantErr(t, "placement of a deleted tenant", err, catalog.ErrNotFound)
	must(t, "deleting the emptied node", s.DeleteNode(ctx, "b"))
	wantErr(t, "deleting it twice", s.DeleteNode(ctx, "b"), catalog.ErrNotFound)

	for _, n := range []catalog.Node{
		{ID: "", URL: "http://x"},
		{ID: "-a", URL: "http://x"},
		{ID: "a/b", URL: "http://x"},
		{ID: strings.Repeat("n", 65), URL: "http://x"},
		{ID: "c", URL: "ftp://x"},
		{ID: "c", URL: "http://"},
		{ID: "c", URL: "http://user:pw@x"},
		{ID: "c", URL: "http://x/?q=1"},
	} {
		wantErr(t, fmt.Sprintf("putting node %+v", n), s.PutNode(ctx, n), catalog.ErrInvalid)
	}
}

// Fill writes n tenants into s as a platform over nodes does: each placed
// on node "a", with the two employees installed ("researcher" and
// "coder", which must not exist yet), five shipped files each. The
// catalog's size per tenant is measured over it (BenchmarkCatalogTenant).
func Fill(ctx context.Context, s catalog.Store, n int) error {
	if err := s.PutNode(ctx, catalog.Node{ID: "a", URL: "http://10.0.0.1:18789"}); err != nil {
		return err
	}
	for _, slug := range []string{"researcher", "coder"} {
		if err := s.PutLibrary(ctx, entry(slug)); err != nil {
			return err
		}
	}
	files := make([]catalog.ShippedFile, 5)
	for i := range files {
		files[i] = catalog.ShippedFile{Path: fmt.Sprintf("file-%d.md", i), SHA256: sum(byte('a' + i))}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := range n {
		id := fmt.Sprintf("tenant-%06d", i)
		if err := s.PutTenant(ctx, catalog.Tenant{ID: id, Name: "Tenant " + id, Created: now}); err != nil {
			return err
		}
		if err := s.Place(ctx, id, "a"); err != nil {
			return err
		}
		for _, slug := range []string{"researcher", "coder"} {
			in := catalog.Installation{TenantID: id, Slug: slug, TemplateHash: sum('f'), InstalledAt: now, UpdatedAt: now, Status: catalog.StatusOK, Files: files}
			if err := s.Install(ctx, in); err != nil {
				return err
			}
		}
	}
	return nil
}
