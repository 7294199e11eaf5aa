package talon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines keeps README.md a front page (issue 19): the reference
// lives in docs/, one subject a file.
const readmeMaxLines = 250

// TestDocLinks fails when a relative link in README.md, BENCHMARKS.md or
// docs/*.md names a file that does not exist, or an #anchor that no
// heading of the target makes. Links to other sites are not followed.
func TestDocLinks(t *testing.T) {
	files := docFiles(t)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range mdLinks(string(text)) {
				if err := checkLink(file, l.target); err != nil {
					t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
				}
			}
		})
	}
}

// TestDocsReachable fails when a file under docs/ is not linked from the
// README's map, or the README outgrows a front page.
func TestDocsReachable(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference to docs/", n, readmeMaxLines)
	}
	linked := map[string]bool{}
	for _, l := range mdLinks(string(text)) {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(path)] = true
	}
	for _, file := range docFiles(t) {
		if strings.HasPrefix(file, "docs"+string(filepath.Separator)) && !linked[file] {
			t.Errorf("%s is not linked from README.md", file)
		}
	}
}

// docFiles lists the documentation the tests check, and fails when the
// list is too short to be the repository's (a broken glob would pass).
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 10 {
		t.Fatalf("found %d files in docs/; is the glob broken?", len(docs))
	}
	return append([]string{"README.md", "BENCHMARKS.md"}, docs...)
}

// checkLink reports why a link written in file does not resolve.
func checkLink(file, target string) error {
	if isExternal(target) {
		return nil
	}
	path, anchor, hasAnchor := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Errorf("no such file %s", dest)
		}
	}
	if !hasAnchor {
		return nil
	}
	if !strings.HasSuffix(dest, ".md") {
		return fmt.Errorf("an anchor into %s, which is not markdown", dest)
	}
	text, err := os.ReadFile(dest)
	if err != nil {
		return err
	}
	anchors := headingAnchors(string(text))
	if !slices.Contains(anchors, anchor) {
		return fmt.Errorf("%s has no heading with anchor #%s (it has %s)", dest, anchor, strings.Join(anchors, ", "))
	}
	return nil
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func isExternal(target string) bool { return schemeRE.MatchString(target) }

type mdLink struct {
	line   int
	target string
}

var (
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	inlineRE   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// mdLinks returns the inline links of a markdown text, outside fenced code
// blocks and code spans. A code span inside a link's text is kept out of
// the way by emptying it first.
func mdLinks(text string) []mdLink {
	var links []mdLink
	forLines(text, func(n int, line string) {
		line = codeSpanRE.ReplaceAllString(line, "``")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			links = append(links, mdLink{line: n, target: m[1]})
		}
	})
	return links
}

// headingAnchors returns the anchors GitHub makes for a markdown text's
// headings, in order, numbering repeats as it does (x, x-1, x-2).
func headingAnchors(text string) []string {
	var anchors []string
	seen := map[string]int{}
	forLines(text, func(_ int, line string) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors = append(anchors, a)
	})
	return anchors
}

// anchor is GitHub's rule for a heading's id: the rendered text in lower
// case, every character but letters, digits, '_', '-' and spaces dropped,
// spaces turned into '-'.
func anchor(heading string) string {
	heading = inlineRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// forLines calls fn with each line (numbered from 1) outside fenced code
// blocks.
func forLines(text string, fn func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(i+1, line)
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Model providers", "model-providers"},
		{"The `bwrap` backend", "the-bwrap-backend"},
		{"`exec` and `process`", "exec-and-process"},
		{"Config over WS: no restart", "config-over-ws-no-restart"},
		{"Measuring: `talon bench`", "measuring-talon-bench"},
		{"Platform: syncing a changed template into 200 tenants", "platform-syncing-a-changed-template-into-200-tenants"},
		{"Sign-in", "sign-in"},
		{"web_fetch", "web_fetch"},
		{"Where else to look?", "where-else-to-look"},
		{"See [the sandbox](docs/sandbox.md) now", "see-the-sandbox-now"},
		{"Cold start ≤ 200 ms", "cold-start--200-ms"},
		{"Déjà vu", "déjà-vu"},
	}
	for _, tt := range tests {
		t.Run(tt.heading, func(t *testing.T) {
			if got := anchor(tt.heading); got != tt.want {
				t.Errorf("anchor(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

func TestMarkdownParsing(t *testing.T) {
	text := strings.Join([]string{
		"# Title",
		"See [a](a.md) and [`b` too](b.md#x), not `[c](c.md)`.",
		"```sh",
		"# not a heading",
		"echo [d](d.md)",
		"```",
		"## Title",
		"## Title",
		"[e](https://example.com) [f](#title-1)",
	}, "\n")
	t.Run("links", func(t *testing.T) {
		want := []mdLink{{2, "a.md"}, {2, "b.md#x"}, {9, "https://example.com"}, {9, "#title-1"}}
		if got := mdLinks(text); !slices.Equal(got, want) {
			t.Errorf("mdLinks = %v, want %v", got, want)
		}
	})
	t.Run("anchors", func(t *testing.T) {
		want := []string{"title", "title-1", "title-2"}
		if got := headingAnchors(text); !slices.Equal(got, want) {
			t.Errorf("headingAnchors = %v, want %v", got, want)
		}
	})
	t.Run("check", func(t *testing.T) {
		dir := t.TempDir()
		doc := filepath.Join(dir, "doc.md")
		if err := os.WriteFile(doc, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			target string
			ok     bool
		}{
			{"#title-2", true},
			{"doc.md#title", true},
			{"#title-3", false},
			{"missing.md", false},
			{".", true},
			{"https://example.com/nowhere", true},
		}
		for _, tt := range tests {
			if err := checkLink(doc, tt.target); (err == nil) != tt.ok {
				t.Errorf("checkLink(%q) = %v, want ok=%v", tt.target, err, tt.ok)
			}
		}
	})
}
