// Package talon_test holds repository-wide checks.
package talon_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs fails when a package has no package comment, or one that
// does not start the way godoc expects ("Package x ..." or "Command x ...").
func TestPackageDocs(t *testing.T) {
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 3 {
		t.Fatalf("found only %d packages; is the walk broken?", len(dirs))
	}
	for dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
				return !strings.HasSuffix(fi.Name(), "_test.go")
			}, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatal(err)
			}
			for name, pkg := range pkgs {
				var doc string
				for _, f := range pkg.Files {
					if f.Doc != nil {
						doc = f.Doc.Text()
						break
					}
				}
				want := "Package " + name + " "
				if name == "main" {
					want = "Command " + filepath.Base(dir) + " "
				}
				switch {
				case doc == "":
					t.Errorf("package %s in %s has no package comment", name, dir)
				case !strings.HasPrefix(doc, want):
					t.Errorf("package %s in %s: comment should start %q, starts %q", name, dir, want, firstLine(doc))
				}
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
