package pdf

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	pageRange  = regexp.MustCompile(`^(\d+)\s*-\s*(\d+)$`)
	pageNumber = regexp.MustCompile(`^\d+$`)
)

// ParsePages reads a page filter such as "1-5" or "1,3,7-9" into sorted,
// distinct 1-based page numbers of at most limit, as OpenClaw's pdf tool
// does: numbers past limit are dropped, and a filter that keeps none is an
// error. Errors are worded for the model.
func ParsePages(filter string, limit int) ([]int, error) {
	seen := map[int]bool{}
	for part := range strings.SplitSeq(filter, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if m := pageRange.FindStringSubmatch(part); m != nil {
			start, err1 := number(m[1])
			end, err2 := number(m[2])
			if err1 != nil || err2 != nil || end < start {
				return nil, fmt.Errorf("invalid page range %q in argument \"pages\"", part)
			}
			for i := start; i <= min(end, limit); i++ {
				seen[i] = true
			}
			continue
		}
		n, err := number(part)
		if !pageNumber.MatchString(part) || err != nil {
			return nil, fmt.Errorf("invalid page number %q in argument \"pages\"; write pages like \"1-5\" or \"1,3,7-9\"", part)
		}
		if n <= limit {
			seen[n] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no PDF pages matched the requested range %q (at most %d pages are read)", filter, limit)
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// number is a page number: a positive integer that fits an int.
func number(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("not a page number: %q", s)
	}
	return n, nil
}
