package analyze

import (
	"errors"
	"fmt"
	"strings"
)

// This file reads a program's arguments the way the program itself will: GNU getopt_long,
// which every coreutils, findutils, sed, grep, diffutils and gzip program uses. Rules that
// look at options must see what the program sees, or `sort --outp=F` is not `sort -o F`
// to the analyser while it is to sort.

// argKind says whether an option takes a value.
type argKind int

const (
	noArg       argKind = iota // -x, --name
	requiredArg                // -x V, -xV, --name V, --name=V
	optionalArg                // -xV, --name=V; a value in the next word is an operand
)

// longOpt is one long option of a program.
type longOpt struct {
	name  string // without the leading --
	canon string // the name rules see: its short letter, or name when it has none
	arg   argKind
}

// optTable is a program's options as its getopt_long call declares them.
type optTable struct {
	short map[byte]argKind
	long  []longOpt
	names []string // long option names, for matchPrefix
	// stop is the optstring's leading '+': options end at the first operand, which is how
	// wrappers keep the wrapped command's options for the command.
	stop bool
}

// option is one option as parsed: name is canonical (see longOpt.canon).
type option struct {
	name     string
	value    string
	hasValue bool
	word     string // as written, for messages
}

// parsedArgs are a program's options and operands, in order.
type parsedArgs struct {
	opts     []option
	operands []string
}

// has returns the first option with one of names, if any.
func (p parsedArgs) has(names ...string) (option, bool) {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return o, true
			}
		}
	}
	return option{}, false
}

// getopt builds a table from a getopt optstring ("ab:c::", a leading '+' to stop at the
// first operand) and long options written the same way, each optionally prefixed by its
// short letter and '|': "o|output:" is --output=FILE, the same option as -o.
func getopt(short string, long ...string) *optTable {
	t := &optTable{short: map[byte]argKind{}}
	if strings.HasPrefix(short, "+") {
		t.stop, short = true, short[1:]
	}
	for i := 0; i < len(short); i++ {
		c, kind := short[i], noArg
		if strings.HasPrefix(short[i+1:], "::") {
			kind, i = optionalArg, i+2
		} else if strings.HasPrefix(short[i+1:], ":") {
			kind, i = requiredArg, i+1
		}
		t.short[c] = kind
	}
	for _, l := range long {
		lo := longOpt{arg: noArg}
		if alias, rest, ok := strings.Cut(l, "|"); ok {
			lo.canon, l = alias, rest
		}
		switch {
		case strings.HasSuffix(l, "::"):
			lo.arg, l = optionalArg, strings.TrimSuffix(l, "::")
		case strings.HasSuffix(l, ":"):
			lo.arg, l = requiredArg, strings.TrimSuffix(l, ":")
		}
		lo.name = l
		if lo.canon == "" {
			lo.canon = l
		}
		t.long = append(t.long, lo)
		t.names = append(t.names, l)
	}
	return t
}

// Errors of matchPrefix.
var (
	errNoMatch   = errors.New("matches nothing")
	errAmbiguous = errors.New("is ambiguous")
)

// matchPrefix resolves word against names as GNU getopt_long resolves a long option and
// gnulib's argmatch an option's value: an exact name wins, else the one name word is a
// prefix of. A prefix of several names is an error for the real program, and so it is
// here; so is the empty word. It is the one place every rule matches option names.
func matchPrefix(names []string, word string) (string, error) {
	if word == "" {
		return "", errNoMatch
	}
	found, n := "", 0
	for _, name := range names {
		if name == word {
			return name, nil
		}
		if strings.HasPrefix(name, word) {
			found, n = name, n+1
		}
	}
	switch n {
	case 0:
		return "", errNoMatch
	case 1:
		return found, nil
	}
	return "", errAmbiguous
}

// parse reads args (argv without the program name) as getopt_long would: options and
// operands in any order unless t.stop, "--" ends the options, "-" is an operand, short
// options cluster (-mo F, -oF), long ones take --name=V or --name V and may be
// abbreviated to any unique prefix. Any word the program would reject (an unknown or
// ambiguous option, a missing value) is an error: the analyser cannot say what a program
// that fails does instead, so that is a miss, never a pass.
func (t *optTable) parse(prog string, args []string) (parsedArgs, error) {
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p, nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			if t.stop {
				p.operands = append(p.operands, args[i:]...)
				return p, nil
			}
			p.operands = append(p.operands, a)
		case strings.HasPrefix(a, "--"):
			o, used, err := t.longOption(prog, a, args[i+1:])
			if err != nil {
				return p, err
			}
			p.opts, i = append(p.opts, o), i+used
		default:
			opts, used, err := t.shortOptions(prog, a, args[i+1:])
			if err != nil {
				return p, err
			}
			p.opts, i = append(p.opts, opts...), i+used
		}
	}
	return p, nil
}

// longOption reads the --name[=value] word a; next are the words after it. used is how
// many of them it took as its value.
func (t *optTable) longOption(prog, a string, next []string) (option, int, error) {
	name, val, hasVal := strings.Cut(a[2:], "=")
	full, err := matchPrefix(t.names, name)
	if err != nil {
		if errors.Is(err, errAmbiguous) {
			return option{}, 0, fmt.Errorf("%s option %q is ambiguous: it abbreviates more than one of %s's options", prog, a, prog)
		}
		return option{}, 0, fmt.Errorf("%s option %q is not one %s has", prog, a, prog)
	}
	var lo longOpt
	for _, l := range t.long {
		if l.name == full {
			lo = l
			break
		}
	}
	o := option{name: lo.canon, value: val, hasValue: hasVal, word: a}
	switch lo.arg {
	case noArg:
		if hasVal {
			return option{}, 0, fmt.Errorf("%s option --%s takes no value, but %q gives one", prog, full, a)
		}
	case requiredArg:
		if !hasVal {
			if len(next) == 0 {
				return option{}, 0, fmt.Errorf("%s option %q needs a value", prog, a)
			}
			o.value, o.hasValue, o.word = next[0], true, a+" "+next[0]
			return o, 1, nil
		}
	}
	return o, 0, nil
}

// shortOptions reads the cluster a (-abc, -oFILE); next are the words after it.
func (t *optTable) shortOptions(prog, a string, next []string) ([]option, int, error) {
	var out []option
	for j := 1; j < len(a); j++ {
		c := a[j]
		kind, ok := t.short[c]
		if !ok {
			return nil, 0, fmt.Errorf("%s option -%c (in %q) is not one %s has", prog, c, a, prog)
		}
		o := option{name: string(c), word: "-" + string(c)}
		switch kind {
		case requiredArg:
			if j+1 < len(a) {
				o.value, o.hasValue, o.word = a[j+1:], true, a
				return append(out, o), 0, nil
			}
			if len(next) == 0 {
				return nil, 0, fmt.Errorf("%s option -%c needs a value", prog, c)
			}
			o.value, o.hasValue, o.word = next[0], true, a+" "+next[0]
			return append(out, o), 1, nil
		case optionalArg:
			o.value, o.hasValue, o.word = a[j+1:], j+1 < len(a), a
			return append(out, o), 0, nil
		}
		out = append(out, o)
	}
	return out, 0, nil
}
