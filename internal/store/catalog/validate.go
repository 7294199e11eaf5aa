package catalog

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/tenantid"
)

// The formats the databases' check constraints also enforce. A slug is
// an agent id (lower case, as OpenClaw normalises them); a tenant id is the
// gateway's (tenantid).
var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckSlug reports whether s is a valid library slug.
func CheckSlug(s string) error {
	if !slugPattern.MatchString(s) {
		return fmt.Errorf("slug %q: want 1-64 of a-z 0-9 _ - starting with a letter or digit: %w", s, ErrInvalid)
	}
	return nil
}

// CheckTenantID reports whether id is a valid tenant id.
func CheckTenantID(id string) error {
	if !tenantid.Valid(id) {
		return fmt.Errorf("tenant id %q: want 1-128 of A-Z a-z 0-9 _ - starting with a letter or digit: %w", id, ErrInvalid)
	}
	return nil
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// CheckNodeID reports whether id is a valid node id: 1-64 of A-Z a-z
// 0-9 . _ : - starting with a letter or digit (a host:port fits).
func CheckNodeID(id string) error {
	if !nodeIDPattern.MatchString(id) {
		return fmt.Errorf("node id %q: want 1-64 of A-Z a-z 0-9 . _ : - starting with a letter or digit: %w", id, ErrInvalid)
	}
	return nil
}

// MaxNodeURL is the longest node URL, in bytes.
const MaxNodeURL = 2048

// CheckNodeURL reports whether u can be a node's base URL: http or
// https, a host, no user info, query or fragment.
func CheckNodeURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case len(u) > MaxNodeURL:
		return fmt.Errorf("node URL: longer than %d bytes: %w", MaxNodeURL, ErrInvalid)
	case err != nil:
		return fmt.Errorf("node URL %q: %v: %w", u, err, ErrInvalid)
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("node URL %q: want http:// or https://: %w", u, ErrInvalid)
	case p.Host == "" || p.User != nil || p.RawQuery != "" || p.Fragment != "" || p.Opaque != "":
		return fmt.Errorf("node URL %q: want scheme://host[:port][/path] without user, query or fragment: %w", u, ErrInvalid)
	}
	return nil
}

// Normalize validates n and stamps its Added time.
func (n *Node) Normalize(now time.Time) error {
	if err := CheckNodeID(n.ID); err != nil {
		return err
	}
	if err := CheckNodeURL(n.URL); err != nil {
		return err
	}
	n.Added = stamp(n.Added, now)
	return nil
}

// stamp is t to the millisecond in UTC, or now when t is zero.
func stamp(t, now time.Time) time.Time {
	if t.IsZero() {
		t = now
	}
	return t.UTC().Truncate(time.Millisecond)
}

// Normalize validates e and puts it in the form a store writes: times
// stamped, Skills non-nil. Stores call it; callers need not.
func (e *Entry) Normalize(now time.Time) error {
	if err := CheckSlug(e.Slug); err != nil {
		return err
	}
	if e.Name == "" {
		return fmt.Errorf("library entry %q: empty name: %w", e.Slug, ErrInvalid)
	}
	if e.Skills == nil {
		e.Skills = []string{}
	}
	for i, s := range e.Skills {
		if s == "" {
			return fmt.Errorf("library entry %q: skills[%d] is empty: %w", e.Slug, i, ErrInvalid)
		}
	}
	e.UpdatedAt = stamp(e.UpdatedAt, now)
	return nil
}

// Normalize validates t and stamps its Created time.
func (t *Tenant) Normalize(now time.Time) error {
	if err := CheckTenantID(t.ID); err != nil {
		return err
	}
	t.Created = stamp(t.Created, now)
	return nil
}

// Normalize validates in, defaults its Status to StatusOK, and stamps its
// times. For an update (keepInstalled) a zero InstalledAt stays zero (the
// store keeps the one it has) and a zero UpdatedAt is now; for a new
// installation UpdatedAt defaults to InstalledAt.
func (in *Installation) Normalize(now time.Time, keepInstalled bool) error {
	if err := CheckTenantID(in.TenantID); err != nil {
		return err
	}
	if err := CheckSlug(in.Slug); err != nil {
		return err
	}
	if in.Status == "" {
		in.Status = StatusOK
	}
	switch {
	case in.Status != StatusOK && in.Status != StatusError:
		return fmt.Errorf("installation %s/%s: status %q: want %q or %q: %w", in.TenantID, in.Slug, in.Status, StatusOK, StatusError, ErrInvalid)
	case in.Status == StatusError && in.Message == "":
		return fmt.Errorf("installation %s/%s: status %q needs a message: %w", in.TenantID, in.Slug, in.Status, ErrInvalid)
	case in.Status == StatusOK && in.Message != "":
		return fmt.Errorf("installation %s/%s: status %q takes no message: %w", in.TenantID, in.Slug, in.Status, ErrInvalid)
	}
	if !(keepInstalled && in.InstalledAt.IsZero()) {
		in.InstalledAt = stamp(in.InstalledAt, now)
	}
	base := in.InstalledAt // a new installation was last updated when installed
	if keepInstalled {
		base = now
	}
	in.UpdatedAt = stamp(in.UpdatedAt, base)
	return in.normalizeFiles()
}

// MaxShippedPath is the longest path a ShippedFile may have, in bytes.
const MaxShippedPath = 1024

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckShippedPath reports whether p can name a file inside a workspace:
// relative, forward slashes, no empty, "." or ".." segment.
func CheckShippedPath(p string) error {
	switch {
	case p == "" || len(p) > MaxShippedPath:
		return fmt.Errorf("shipped file path %q: want 1-%d bytes: %w", p, MaxShippedPath, ErrInvalid)
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Errorf("shipped file path %q: not valid text: %w", p, ErrInvalid)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("shipped file path %q: want a relative path without empty, . or .. segments: %w", p, ErrInvalid)
		}
	}
	return nil
}

// normalizeFiles checks the shipped files and sorts them by path.
func (in *Installation) normalizeFiles() error {
	if in.Files == nil {
		return nil
	}
	if len(in.Files) == 0 {
		return fmt.Errorf("installation %s/%s: an empty record of shipped files (leave it nil when unknown): %w", in.TenantID, in.Slug, ErrInvalid)
	}
	in.Files = slices.Clone(in.Files)
	slices.SortFunc(in.Files, func(a, b ShippedFile) int { return strings.Compare(a.Path, b.Path) })
	for i, f := range in.Files {
		if err := CheckShippedPath(f.Path); err != nil {
			return fmt.Errorf("installation %s/%s: %w", in.TenantID, in.Slug, err)
		}
		if !sha256Pattern.MatchString(f.SHA256) {
			return fmt.Errorf("installation %s/%s: shipped file %q: sha256 %q is not 64 lower-case hex digits: %w", in.TenantID, in.Slug, f.Path, f.SHA256, ErrInvalid)
		}
		if i > 0 && in.Files[i-1].Path == f.Path {
			return fmt.Errorf("installation %s/%s: shipped file %q is listed twice: %w", in.TenantID, in.Slug, f.Path, ErrInvalid)
		}
	}
	return nil
}
