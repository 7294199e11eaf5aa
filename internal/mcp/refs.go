package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxExpanded bounds the subschemas one validation may visit with every
// $ref followed: a small schema whose refs fan out (a refers to b twice,
// b to c twice, ...) would otherwise cost exponential time per call.
const maxExpanded = 10000

// checkRefs rejects what the validator could not finish on: a $ref cycle
// (on some, such as a property referring to itself, it recurses until the
// stack overflows, which no recover catches), refs that are not local JSON
// pointers, nested $id (which would change what a pointer means) and
// exponential ref fan-out. A recursive schema (a tree type) is refused
// too: telling its safe cycles from the deadly ones is not worth it for
// tool arguments, which models handle best flat anyway.
func checkRefs(root any) error {
	g := refGraph{root: root, memo: map[string]int{}, onStack: map[string]bool{}}
	_, err := g.expand(root, true)
	return err
}

type refGraph struct {
	root    any
	memo    map[string]int  // expanded size of each ref target
	onStack map[string]bool // ref targets being expanded
}

func (g *refGraph) expand(node any, top bool) (int, error) {
	n := 1
	add := func(c int, err error) error {
		if err != nil {
			return err
		}
		if n += c; n > maxExpanded {
			return fmt.Errorf("input schema expands to more than %d subschemas through $ref", maxExpanded)
		}
		return nil
	}
	switch v := node.(type) {
	case map[string]any:
		for k, x := range v {
			var err error
			// Keywords in any case: the schema is decoded into a Go struct,
			// and encoding/json matches keys without regard to case, so
			// "$rEf" is a $ref to the compiler (a cycle spelled so once
			// overflowed its stack).
			switch s, isStr := x.(string); {
			case strings.EqualFold(k, "$ref") && isStr:
				err = add(g.follow(s))
			case (strings.EqualFold(k, "$dynamicRef") || strings.EqualFold(k, "$recursiveRef")) && isStr:
				err = fmt.Errorf("input schema: %s is not supported", k)
			case strings.EqualFold(k, "$id") && isStr && !top:
				err = errors.New("input schema: $id below the root is not supported")
			default:
				err = add(g.expand(x, false))
			}
			if err != nil {
				return 0, err
			}
		}
	case []any:
		for _, x := range v {
			if err := add(g.expand(x, false)); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (g *refGraph) follow(ref string) (int, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok || frag != "" && !strings.HasPrefix(frag, "/") {
		return 0, fmt.Errorf("input schema: $ref %q is not a local JSON pointer (#/...)", ref)
	}
	if n, ok := g.memo[frag]; ok {
		return n, nil
	}
	if g.onStack[frag] {
		return 0, fmt.Errorf("input schema: $ref %q is part of a cycle", ref)
	}
	target, err := pointer(g.root, frag)
	if err != nil {
		return 0, fmt.Errorf("input schema: $ref %q: %w", ref, err)
	}
	g.onStack[frag] = true
	n, err := g.expand(target, frag == "")
	delete(g.onStack, frag)
	if err != nil {
		return 0, err
	}
	g.memo[frag] = n
	return n, nil
}

// pointer resolves a URI-fragment JSON pointer ("" or "/a/b") in doc.
func pointer(doc any, frag string) (any, error) {
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, err
	}
	if frag == "" {
		return doc, nil
	}
	cur := doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			x, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			cur = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("no element %q", tok)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("nothing below %q", tok)
		}
	}
	return cur, nil
}
