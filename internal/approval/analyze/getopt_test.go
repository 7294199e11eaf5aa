package analyze

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMatchPrefix: GNU getopt_long's rule for long options (and argmatch's for values):
// an exact name wins, a unique prefix resolves, anything else is an error.
func TestMatchPrefix(t *testing.T) {
	names := []string{"output", "compress-program", "check", "check-chars", "reverse", "recursive", "read"}
	tests := []struct {
		word, want string
		err        error
	}{
		{"output", "output", nil},
		{"outp", "output", nil},
		{"o", "output", nil},
		{"compress-prog", "compress-program", nil},
		{"com", "compress-program", nil},
		{"c", "", errAmbiguous},        // check, check-chars, compress-program
		{"check", "check", nil},        // exact beats the longer check-chars
		{"check-", "check-chars", nil}, // unique again
		{"re", "", errAmbiguous},       // reverse, recursive, read
		{"rec", "recursive", nil},
		{"rea", "read", nil},
		{"outputx", "", errNoMatch}, // longer than any name
		{"x", "", errNoMatch},
		{"", "", errNoMatch},            // "--=v" names nothing
		{"OUTPUT", "", errNoMatch},      // case matters, as in getopt
		{"output=FILE", "", errNoMatch}, // callers cut the value first
		{"compress-program", "compress-program", nil},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			got, err := matchPrefix(names, tt.word)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("matchPrefix(%q) = %q, %v; want %q, %v", tt.word, got, err, tt.want, tt.err)
			}
		})
	}
	if _, err := matchPrefix(nil, "a"); !errors.Is(err, errNoMatch) {
		t.Errorf("no names: %v", err)
	}
}

// TestGetopt: parse reads arguments as getopt_long does, so a rule sees the option the
// program sees whichever way it is written.
func TestGetopt(t *testing.T) {
	type opt = [3]string // canonical name, value, "v" when a value was given
	tests := []struct {
		name     string
		t        *optTable
		args     []string
		opts     []opt
		operands []string
		err      string
	}{
		{"long with =", sortOpts, []string{"--outp=F", "a"}, []opt{{"o", "F", "v"}}, []string{"a"}, ""},
		{"long with a separate value", sortOpts, []string{"--output", "F", "a"}, []opt{{"o", "F", "v"}}, []string{"a"}, ""},
		{"long value starting with -", sortOpts, []string{"--output", "-r"}, []opt{{"o", "-r", "v"}}, nil, ""},
		{"short attached", sortOpts, []string{"-oF"}, []opt{{"o", "F", "v"}}, nil, ""},
		{"short cluster", sortOpts, []string{"-mo", "F", "a"}, []opt{{"m", "", ""}, {"o", "F", "v"}}, []string{"a"}, ""},
		{"cluster with attached value", sortOpts, []string{"-rnoF"}, []opt{{"r", "", ""}, {"n", "", ""}, {"o", "F", "v"}}, nil, ""},
		{"options after operands", sortOpts, []string{"a", "-o", "F", "b"}, []opt{{"o", "F", "v"}}, []string{"a", "b"}, ""},
		{"-- ends options", sortOpts, []string{"--", "-o", "F"}, nil, []string{"-o", "F"}, ""},
		{"- is an operand", sortOpts, []string{"-", "-r"}, []opt{{"r", "", ""}}, []string{"-"}, ""},
		{"optional long value only with =", sedOpts, []string{"--in-pl", "x", "f"}, []opt{{"i", "", ""}}, []string{"x", "f"}, ""},
		{"optional long value", sedOpts, []string{"--in-place=.bak", "x"}, []opt{{"i", ".bak", "v"}}, []string{"x"}, ""},
		{"optional short value attached", sedOpts, []string{"-in", "x"}, []opt{{"i", "n", "v"}}, []string{"x"}, ""},
		{"optional short value ends the cluster", sedOpts, []string{"-ni", "x"}, []opt{{"n", "", ""}, {"i", "", ""}}, []string{"x"}, ""},
		{"aliases share a name", sedOpts, []string{"--silent", "--quiet", "-n"}, []opt{{"n", "", ""}, {"n", "", ""}, {"n", "", ""}}, nil, ""},
		{"stop at the first operand", timeoutOpts, []string{"-s", "KILL", "5", "sh", "-c", "id"}, []opt{{"s", "KILL", "v"}}, []string{"5", "sh", "-c", "id"}, ""},
		{"digits are options where declared", uniqOpts, []string{"-2", "a", "b"}, []opt{{"2", "", ""}}, []string{"a", "b"}, ""},
		{"ambiguous long", sedOpts, []string{"--s", "p"}, nil, nil, `"--s" is ambiguous`},
		{"unknown long", sortOpts, []string{"--nope"}, nil, nil, `"--nope" is not one sort has`},
		{"unknown short", sortOpts, []string{"-rq"}, nil, nil, `-q (in "-rq") is not one sort has`},
		{"missing value", sortOpts, []string{"-o"}, nil, nil, `-o needs a value`},
		{"missing long value", sortOpts, []string{"--output"}, nil, nil, `"--output" needs a value`},
		{"value to a flag", sortOpts, []string{"--reverse=1"}, nil, nil, `takes no value`},
		{"empty long name", sortOpts, []string{"--=x"}, nil, nil, `is not one sort has`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.t.parse("sort", tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []opt
			for _, o := range p.opts {
				v := ""
				if o.hasValue {
					v = "v"
				}
				got = append(got, opt{o.name, o.value, v})
			}
			if d := cmp.Diff(tt.opts, got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.operands, p.operands); d != "" {
				t.Errorf("operands (-want +got):\n%s", d)
			}
		})
	}
}

// TestTablesWellFormed: every long option of every table has a unique name, and an alias
// letter is one of the table's short options taking a value alike, so a rule that tests
// "o" sees -o and --output the same way.
func TestTablesWellFormed(t *testing.T) {
	tables := map[string]*optTable{
		"sort": sortOpts, "shuf": shufOpts, "uniq": uniqOpts, "tee": teeOpts, "date": dateOpts,
		"ptx": ptxOpts, "sed": sedOpts, "grep": grepOpts, "diff": diffOpts, "diff3": diff3Opts,
		"sdiff": sdiffOpts, "gzip": gzipOpts, "env": envOpts, "nice": niceOpts, "time": timeOpts,
		"timeout": timeoutOpts,
	}
	for name, tb := range tables {
		seen := map[string]bool{}
		for _, l := range tb.long {
			if seen[l.name] {
				t.Errorf("%s: --%s twice", name, l.name)
			}
			seen[l.name] = true
			if len(l.canon) != 1 || l.canon == l.name {
				continue
			}
			switch kind, ok := tb.short[l.canon[0]]; {
			case !ok:
				t.Errorf("%s: --%s is -%s, which the short options lack", name, l.name, l.canon)
			case kind != l.arg:
				t.Errorf("%s: --%s and -%s differ in taking a value", name, l.name, l.canon)
			}
		}
	}
}
