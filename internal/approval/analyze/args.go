package analyze

import (
	"fmt"
	"path"
	"strings"

	"talon/internal/contain"
)

// The rules that read a program's arguments: which options and operands write a file,
// run a program, or read recursively. Each table lists every option of the program (from
// its source and --help), not only the dangerous ones, so that an abbreviation resolves
// to what the program resolves it to; an option a table lacks is a reason, never a pass.

// argRule returns the reasons base run with args (argv without the name) is unsafe.
type argRule func(a *analyzer, base string, args []string) []Reason

var argRules map[string]argRule

// Option tables, as each program declares them to getopt_long.
var (
	sortOpts = getopt("bcCdfghik:mMno:rRsS:t:T:uVy:z",
		"b|ignore-leading-blanks", "check::", "compress-program:", "debug", "d|dictionary-order",
		"files0-from:", "f|ignore-case", "g|general-numeric-sort", "h|human-numeric-sort",
		"i|ignore-nonprinting", "k|key:", "M|month-sort", "m|merge", "n|numeric-sort", "o|output:",
		"parallel:", "random-source:", "R|random-sort", "r|reverse", "batch-size:", "S|buffer-size:",
		"sort:", "s|stable", "t|field-separator:", "T|temporary-directory:", "u|unique",
		"V|version-sort", "z|zero-terminated", "help", "version")
	shufOpts = getopt("ei:n:o:rz", "e|echo", "i|input-range:", "n|head-count:", "o|output:",
		"random-source:", "r|repeat", "z|zero-terminated", "help", "version")
	uniqOpts = getopt("0123456789cdDf:is:uw:z", "c|count", "d|repeated", "all-repeated::", "group::",
		"i|ignore-case", "u|unique", "f|skip-fields:", "s|skip-chars:", "w|check-chars:",
		"z|zero-terminated", "help", "version")
	teeOpts  = getopt("aip", "a|append", "i|ignore-interrupts", "output-error::", "help", "version")
	dateOpts = getopt("d:f:I::r:Rs:u", "d|date:", "debug", "f|file:", "I|iso-8601::", "r|reference:",
		"R|rfc-email", "R|rfc-822", "R|rfc-2822", "rfc-3339:", "resolution", "s|set:", "u|utc", "u|uct",
		"u|universal", "help", "version")
	ptxOpts = getopt("AF:GM:ORS:TW:b:i:fg:o:trw:", "A|auto-reference", "G|traditional",
		"F|flag-truncation:", "M|macro-name:", "format:", "R|right-side-refs", "S|sentence-regexp:",
		"W|word-regexp:", "b|break-file:", "f|ignore-case", "g|gap-size:", "i|ignore-file:",
		"o|only-file:", "r|references", "t|typeset-mode", "w|width:", "help", "version")
	sedOpts = getopt("bsnrzuEe:f:l:i::V:", "b|binary", "r|regexp-extended", "debug", "e|expression:",
		"f|file:", "i|in-place::", "l|line-length:", "z|null-data", "z|zero-terminated", "n|quiet",
		"posix", "n|silent", "sandbox", "s|separate", "u|unbuffered", "version", "help",
		"follow-symlinks")
	grepOpts = getopt("0123456789A:B:C:D:EFGHIPTUVX:abcd:e:f:hiLlm:noqRrsuvwxyZz",
		"E|extended-regexp", "F|fixed-strings", "F|fixed-regexp", "G|basic-regexp", "P|perl-regexp",
		"A|after-context:", "B|before-context:", "binary-files:", "b|byte-offset", "C|context:",
		"color::", "colour::", "c|count", "D|devices:", "d|directories:", "R|dereference-recursive",
		"exclude:", "exclude-from:", "exclude-dir:", "f|file:", "l|files-with-matches",
		"L|files-without-match", "group-separator:", "no-group-separator", "help", "include:",
		"i|ignore-case", "no-ignore-case", "T|initial-tab", "label:", "line-buffered",
		"n|line-number", "x|line-regexp", "m|max-count:", "h|no-filename", "s|no-messages",
		"Z|null", "z|null-data", "o|only-matching", "q|quiet", "q|silent", "r|recursive",
		"e|regexp:", "v|invert-match", "a|text", "U|binary", "u|unix-byte-offsets", "V|version",
		"H|with-filename", "w|word-regexp")
	diffOpts = getopt("0123456789abBcC:dD:eEfF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ",
		"normal", "q|brief", "s|report-identical-files", "context::", "unified::", "e|ed", "n|rcs",
		"y|side-by-side", "W|width:", "left-column", "suppress-common-lines", "p|show-c-function",
		"F|show-function-line:", "L|label:", "t|expand-tabs", "T|initial-tab", "tabsize:",
		"suppress-blank-empty", "l|paginate", "r|recursive", "no-dereference", "N|new-file",
		"P|unidirectional-new-file", "ignore-file-name-case", "no-ignore-file-name-case",
		"x|exclude:", "X|exclude-from:", "S|starting-file:", "from-file:", "to-file:",
		"i|ignore-case", "E|ignore-tab-expansion", "Z|ignore-trailing-space",
		"b|ignore-space-change", "w|ignore-all-space", "B|ignore-blank-lines",
		"I|ignore-matching-lines:", "a|text", "strip-trailing-cr", "D|ifdef:",
		"old-group-format:", "new-group-format:", "unchanged-group-format:",
		"changed-group-format:", "line-format:", "old-line-format:", "new-line-format:",
		"unchanged-line-format:", "d|minimal", "horizon-lines:", "H|speed-large-files",
		"color::", "palette:", "binary", "f|forward-ed", "help", "v|version")
	diff3Opts = getopt("aeimvx3AEL:TX", "a|text", "A|show-all", "e|ed", "diff-program:",
		"E|show-overlap", "3|easy-only", "x|overlap-only", "m|merge", "L|label:", "T|initial-tab",
		"strip-trailing-cr", "help", "v|version")
	sdiffOpts = getopt("abBdEHiI:lo:stvw:WZ", "o|output:", "i|ignore-case",
		"E|ignore-tab-expansion", "Z|ignore-trailing-space", "b|ignore-space-change",
		"W|ignore-all-space", "B|ignore-blank-lines", "I|ignore-matching-lines:",
		"strip-trailing-cr", "a|text", "w|width:", "l|left-column", "s|suppress-common-lines",
		"t|expand-tabs", "tabsize:", "d|minimal", "H|speed-large-files", "diff-program:", "help",
		"v|version")
	gzipOpts = getopt("ab:cdfhHklLmMnNqrS:tvVZ123456789", "a|ascii", "c|to-stdout", "c|stdout",
		"d|decompress", "d|uncompress", "f|force", "h|help", "k|keep", "l|list", "L|license",
		"n|no-name", "N|name", "m|no-time", "M|time", "q|quiet", "q|silent", "synchronous",
		"r|recursive", "S|suffix:", "t|test", "v|verbose", "V|version", "1|fast", "9|best",
		"Z|lzw", "b|bits:", "rsyncable")
)

func init() {
	grep := func(a *analyzer, base string, args []string) []Reason { return a.grep(base, args, false) }
	rgrep := func(a *analyzer, base string, args []string) []Reason { return a.grep(base, args, true) }
	argRules = map[string]argRule{
		"sort":  sortRule,
		"shuf":  shufRule,
		"uniq":  uniqRule,
		"tee":   teeRule,
		"date":  dateRule,
		"ptx":   ptxRule,
		"dd":    ddRule,
		"xxd":   xxdRule,
		"sed":   sedRule,
		"find":  findRule,
		"diff3": diff3Rule,
		"sdiff": sdiffRule,
		"diff":  (*analyzer).diff, "zdiff": (*analyzer).diff, "bzdiff": (*analyzer).diff,
		"xzdiff": (*analyzer).diff, "lzdiff": (*analyzer).diff,
		"zcat": (*analyzer).zcat,
		"grep": grep, "egrep": grep, "fgrep": grep, "zgrep": grep, "zegrep": grep, "zfgrep": grep,
		"bzgrep": grep, "bzegrep": grep, "bzfgrep": grep, "xzgrep": grep, "xzegrep": grep,
		"xzfgrep": grep, "lzgrep": grep, "lzegrep": grep, "lzfgrep": grep, "zstdgrep": grep,
		"rgrep": rgrep,
		"rg":    (*analyzer).rg,
	}
}

// parsed reads args with t, or returns the reason the program would reject them.
func parsed(t *optTable, base string, args []string) (parsedArgs, []Reason) {
	p, err := t.parse(base, args)
	if err != nil {
		return p, []Reason{{CodeOption, err.Error()}}
	}
	return p, nil
}

func sortRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(sortOpts, base, args)
	for _, o := range p.opts {
		switch o.name {
		case "o":
			rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes the file %q", base, o.word, o.value)})
		case "T":
			rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes temporary files in %q", base, o.word, o.value)})
		case "compress-program":
			rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s %s runs the program %q", base, o.word, o.value)})
		}
	}
	return rs
}

func shufRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(shufOpts, base, args)
	if o, ok := p.has("o"); ok {
		rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes the file %q", base, o.word, o.value)})
	}
	return rs
}

// uniqRule: uniq [INPUT [OUTPUT]] writes its second operand.
func uniqRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(uniqOpts, base, args)
	return append(rs, outputOperand(base, p.operands, 1)...)
}

// outputOperand reports the operand at i, when there is one and it is not "-" (standard
// output), as a file the program writes.
func outputOperand(base string, operands []string, i int) []Reason {
	if i < len(operands) && operands[i] != "-" {
		return []Reason{{CodeWrites, fmt.Sprintf("%s writes its operand %q", base, operands[i])}}
	}
	return nil
}

// teeRule: every operand of tee is a file it writes ("-" too: GNU tee opens a file so named).
func teeRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(teeOpts, base, args)
	for _, f := range p.operands {
		rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s writes %q", base, f)})
	}
	return rs
}

// dateRule: date -s, and an operand that is not a +FORMAT, set the clock.
func dateRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(dateOpts, base, args)
	if o, ok := p.has("s"); ok {
		rs = append(rs, Reason{CodeSystem, fmt.Sprintf("%s %s sets the system clock", base, o.word)})
	}
	for _, op := range p.operands {
		if !strings.HasPrefix(op, "+") {
			rs = append(rs, Reason{CodeSystem, fmt.Sprintf("%s %q sets the system clock", base, op)})
		}
	}
	return rs
}

// ptxRule: ptx -G (System V mode) writes its second operand.
func ptxRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(ptxOpts, base, args)
	if _, ok := p.has("G"); ok {
		rs = append(rs, outputOperand(base, p.operands, 1)...)
	}
	return rs
}

// ddRule: dd's operands are KEY=VALUE; of= writes.
func ddRule(_ *analyzer, base string, args []string) []Reason {
	var rs []Reason
	for _, o := range args {
		if strings.HasPrefix(o, "of=") {
			rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes a file", base, o)})
		}
	}
	return rs
}

// xxdValue are the xxd options that take a value.
const xxdValue = "cglnoRs"

// xxdRule reads xxd's arguments as xxd does (its own parser, not getopt): options until
// the first word that is not one, every option known by its first letter after a '-' (or
// "--"), then [INFILE [OUTFILE]]; an OUTFILE other than "-" is written, with or without
// -r. An option that takes a value consumes the next word only when written bare (-c 8):
// read any other way it is taken as attached, which can only count one operand too many.
func xxdRule(_ *analyzer, base string, args []string) []Reason {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			a = a[1:]
		}
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		switch {
		case strings.ContainsRune("abeupiCdrEtv", rune(a[1])):
		case strings.ContainsRune(xxdValue, rune(a[1])):
			if len(a) == 2 {
				if i+1 >= len(args) {
					return []Reason{{CodeOption, fmt.Sprintf("%s option %q needs a value", base, args[i])}}
				}
				i++
			}
		default:
			return []Reason{{CodeOption, fmt.Sprintf("%s option %q is not one %s has", base, args[i], base)}}
		}
	}
	return outputOperand(base, args[i:], 1)
}

// sedRule: -i edits files in place, and without --sandbox a script's w, W and e commands
// write files and run commands, so only sed --sandbox without -i is safe.
func sedRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(sedOpts, base, args)
	if len(rs) > 0 {
		return rs
	}
	if o, ok := p.has("i"); ok {
		rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s edits files in place", base, o.word)})
	}
	if _, ok := p.has("sandbox"); !ok {
		rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s without --sandbox can write files (w) and run commands (e)", base)})
	}
	return rs
}

// findRule: find's primaries are whole words (find does not abbreviate them).
func findRule(_ *analyzer, base string, args []string) []Reason {
	var rs []Reason
	for _, o := range args {
		switch o {
		case "-exec", "-execdir", "-ok", "-okdir":
			rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s %s runs commands", base, o)})
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes or deletes files", base, o)})
		}
	}
	return rs
}

func diff3Rule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(diff3Opts, base, args)
	if o, ok := p.has("diff-program"); ok {
		rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s %s runs the program %q", base, o.word, o.value)})
	}
	return rs
}

// sdiffRule: sdiff -o merges interactively into a file (and its e command runs an
// editor); --diff-program runs a program.
func sdiffRule(_ *analyzer, base string, args []string) []Reason {
	p, rs := parsed(sdiffOpts, base, args)
	if o, ok := p.has("o"); ok {
		rs = append(rs, Reason{CodeWrites, fmt.Sprintf("%s %s writes the file %q and can run an editor", base, o.word, o.value)})
	}
	if o, ok := p.has("diff-program"); ok {
		rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s %s runs the program %q", base, o.word, o.value)})
	}
	return rs
}

// grepDirectories are the values of grep -d/--directories, which grep matches by unique
// prefix as it does options.
var grepDirectories = []string{"read", "recurse", "skip"}

// grep: -R follows every symlink, so it can read anything; -r, -d recurse (and rgrep)
// read recursively, which needs approval when an operand is outside the working directory.
func (a *analyzer) grep(base string, args []string, recursive bool) []Reason {
	p, rs := parsed(grepOpts, base, args)
	if len(rs) > 0 {
		return rs
	}
	for _, o := range p.opts {
		switch o.name {
		case "R":
			rs = append(rs, Reason{CodeReadsOut, fmt.Sprintf("%s %s follows every symlink, so it can read anything", base, o.word)})
		case "r":
			recursive = true
		case "d":
			v, err := matchPrefix(grepDirectories, o.value)
			if err != nil {
				rs = append(rs, Reason{CodeOption, fmt.Sprintf("%s %s: %q %v among read, recurse, skip", base, o.word, o.value, err)})
			}
			recursive = recursive || v == "recurse"
		}
	}
	if recursive {
		rs = append(rs, a.outside(base, p.operands)...)
	}
	return rs
}

// diff -r compares directories recursively: its operands and --from-file/--to-file must
// stay in the working directory.
func (a *analyzer) diff(base string, args []string) []Reason {
	p, rs := parsed(diffOpts, base, args)
	if len(rs) > 0 {
		return rs
	}
	if _, ok := p.has("r"); !ok {
		return nil
	}
	files := p.operands
	for _, o := range p.opts {
		if o.name == "from-file" || o.name == "to-file" {
			files = append(files, o.value)
		}
	}
	return a.outside(base, files)
}

// zcat is gzip -cd: it never writes a file, but -r reads directories recursively.
func (a *analyzer) zcat(base string, args []string) []Reason {
	p, rs := parsed(gzipOpts, base, args)
	if len(rs) > 0 {
		return rs
	}
	if _, ok := p.has("r"); ok {
		return a.outside(base, p.operands)
	}
	return nil
}

// rg reads recursively by default; --pre and -z run programs, -L follows symlinks.
// ripgrep does not abbreviate long options.
func (a *analyzer) rg(base string, args []string) []Reason {
	var rs []Reason
	var operands []string
	for _, o := range args {
		switch {
		case strings.HasPrefix(o, "--pre"), o == "-z", o == "--search-zip", o == "-L", o == "--follow":
			rs = append(rs, Reason{CodeRunsCmds, fmt.Sprintf("%s %s runs programs or follows symlinks", base, o)})
		case !strings.HasPrefix(o, "-"):
			operands = append(operands, o)
		}
	}
	return append(rs, a.outside(base, operands)...)
}

// outside reports operands of a recursive reader that resolve outside the working
// directory. The pattern operand is judged too: a pattern that looks like an outside
// path costs a prompt, never a silent read.
func (a *analyzer) outside(base string, operands []string) []Reason {
	dir, err := a.env.FS.EvalSymlinks(a.env.Dir)
	if err != nil {
		return []Reason{{CodeReadsOut, fmt.Sprintf("resolving the working directory %s: %v", a.env.Dir, err)}}
	}
	var rs []Reason
	for _, o := range operands {
		p := o
		if !path.IsAbs(p) {
			p = a.env.Dir + "/" + p
		}
		real, err := a.env.FS.EvalSymlinks(p)
		if err != nil {
			real = path.Clean(p) // a word that is no file (the pattern) is judged lexically
		}
		if _, in := contain.Within(dir, real); !in {
			rs = append(rs, Reason{CodeReadsOut, fmt.Sprintf("%s reads %q recursively, outside the working directory", base, o)})
		}
	}
	return rs
}
