// Package tenantid is the one rule for tenant ids, shared by the gateway
// (which finds a tenant by its X-Tenant-ID) and the platform (which
// creates and deletes tenant directories), so the two can never disagree
// about which ids exist. An id is one safe path segment.
//
// Concurrency: stateless; safe for concurrent use.
package tenantid

import "regexp"

// Pattern is the id's characters: a letter or digit, then letters,
// digits, underscores or dashes; Valid also bounds it to 128. No dots, so
// no "." or "..", and no slashes, so an id is always exactly one
// directory under tenants/. (The bound is not in the pattern: a bounded
// repeat compiles to a program of hundreds of instructions.)
var Pattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Valid reports whether id is a well-formed tenant id.
func Valid(id string) bool { return len(id) <= 128 && Pattern.MatchString(id) }
