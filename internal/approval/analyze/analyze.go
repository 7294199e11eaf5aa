package analyze

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep analysis bounded. Anything beyond them is undecidable, never truncated.
const (
	// MaxCommandBytes caps the input; a longer command is not parsed at all.
	MaxCommandBytes = 64 << 10
	// maxSegments caps how many segments one plan may hold.
	maxSegments = 512
	// maxDepth caps nesting of subshells, groups and substitutions.
	maxDepth = 64
	// maxUnwrap caps wrapper chains such as `env nice timeout 5 env …`.
	maxUnwrap = 16
)

// Env is what the command will see when it runs.
type Env struct {
	Dir  string // absolute working directory
	PATH string // the PATH the shell will search
	HOME string // for ~ expansion; empty means ~ cannot be expanded
	FS   FS     // where executables are looked up; nil means HostFS
	// Vars are NAME=value pairs the command's environment gets besides
	// the sandbox's own (the exec call's env argument). One that changes
	// which program runs or what it loads (PATH, LD_PRELOAD, BASH_ENV, …)
	// makes the plan undecidable, as the same assignment in the command
	// text does.
	Vars []string
}

// Reason says why a plan or segment cannot be trusted. Code is stable for tests and
// programs; Detail is for people.
type Reason struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (r Reason) String() string { return r.Code + ": " + r.Detail }

// Reason codes.
const (
	CodeTooLong     = "too-long"       // input over MaxCommandBytes
	CodeControl     = "control-char"   // control characters or invalid UTF-8 in the input
	CodeParse       = "parse"          // the shell parser rejected the command
	CodeEmpty       = "empty"          // nothing to run
	CodeLimit       = "limit"          // too many segments or too deep
	CodeNonLiteral  = "non-literal"    // $VAR, ${…}, $(…), `…`, $((…)), $'…', <(…)
	CodeGlob        = "glob"           // unquoted * ? [ or extglob
	CodeBrace       = "brace"          // unquoted { (brace expansion)
	CodeTilde       = "tilde"          // ~user, ~ with no HOME, ~ after = or :
	CodeNewline     = "newline"        // a newline inside a word
	CodeNonASCII    = "non-ascii-name" // look-alike characters in a command name
	CodeNotFound    = "not-found"      // the executable could not be resolved
	CodeRelPATH     = "relative-path"  // found through a relative PATH entry or bad workdir
	CodeBuiltin     = "builtin"        // a shell builtin that changes the shell (eval, ., cd, …)
	CodeFunction    = "function"       // defines a shell function
	CodeCompound    = "compound"       // if/while/for/case/[[ ]]/(( ))/declare/…
	CodeAssignment  = "assignment"     // a bare assignment or a dangerous variable
	CodeRedirect    = "redirect"       // writes to a file, or a non-literal target
	CodeHeredoc     = "heredoc"        // here-document or here-string
	CodeShell       = "shell"          // runs a shell
	CodeInterpreter = "interpreter"    // runs an interpreter
	CodeMultiCall   = "multi-call"     // busybox/toybox
	CodeRunsCmds    = "runs-commands"  // xargs, find -exec, editors, build tools, …
	CodePrivilege   = "privilege"      // sudo, doas, chroot, …
	CodeWrites      = "writes"         // writes files through its arguments
	CodeNetwork     = "network"        // talks to the network
	CodeReadsOut    = "reads-outside"  // recursive read outside the workdir
	CodeWrapper     = "wrapper"        // a wrapper option not understood or unsafe
	CodeOption      = "option"         // an option the program would reject: unknown, ambiguous, no value
	CodeConfigured  = "configured"     // git, make, npm, …: run what files the agent can write say
	CodeProcesses   = "processes"      // kill, pkill, renice: acts on other processes
	CodeSystem      = "system"         // date -s, stty: changes the machine's clock or terminal
)

// Redirect is one redirection of a segment.
type Redirect struct {
	Op     string `json:"op"`               // ">", ">>", "<", "2>&1" style operator
	Fd     string `json:"fd,omitempty"`     // explicit fd, if any
	Target string `json:"target,omitempty"` // the literal target word
	Write  bool   `json:"write,omitempty"`  // opens Target for writing
}

// Wrapper is a program that was unwrapped to find the real executable.
type Wrapper struct {
	Name string   `json:"name"`           // as written
	Path string   `json:"path,omitempty"` // resolved; empty for shell builtins (exec, command)
	Argv []string `json:"argv"`           // its own argv, up to the wrapped command
}

// Segment is one simple command the shell would run.
type Segment struct {
	Source     string     `json:"source"`          // the text of the segment
	Where      string     `json:"where,omitempty"` // nesting, e.g. "subshell/cmdsubst"
	Background bool       `json:"background,omitempty"`
	Assigns    []string   `json:"assigns,omitempty"` // NAME=value prefixes, when literal
	Wrappers   []Wrapper  `json:"wrappers,omitempty"`
	Name       string     `json:"name,omitempty"` // the real command as written (after unwrapping)
	Path       string     `json:"path,omitempty"` // the real executable, absolute, symlinks resolved
	Argv       []string   `json:"argv,omitempty"` // the real command's argv; nil unless fully literal
	Redirects  []Redirect `json:"redirects,omitempty"`
	Reasons    []Reason   `json:"reasons,omitempty"`
}

// Plan is the result of Analyze.
type Plan struct {
	Command  string    `json:"command"`
	Dir      string    `json:"dir"`
	Segments []Segment `json:"segments"`
	Reasons  []Reason  `json:"reasons,omitempty"` // reasons not tied to one segment
}

// Decidable reports whether every part of the command was understood and nothing in it is
// unsafe: no plan-level reason, at least one segment, and every segment resolved to an
// absolute path with no reasons. Only a decidable plan can be a hit.
func (p *Plan) Decidable() bool {
	if p == nil || len(p.Reasons) > 0 || len(p.Segments) == 0 {
		return false
	}
	for i := range p.Segments {
		s := &p.Segments[i]
		if len(s.Reasons) > 0 || !path.IsAbs(s.Path) || s.Argv == nil {
			return false
		}
	}
	return true
}

// AllReasons returns the plan's reasons followed by every segment's, for messages.
func (p *Plan) AllReasons() []Reason {
	out := append([]Reason(nil), p.Reasons...)
	for _, s := range p.Segments {
		out = append(out, s.Reasons...)
	}
	return out
}

// Hit reports whether the plan is decidable and satisfied accepts every segment. It is the
// one place a caller combines allowlist, safe-bin and skill-bin checks (spec §4.4 "hit");
// an undecidable plan is never a hit, whatever satisfied says.
func (p *Plan) Hit(satisfied func(Segment) bool) bool {
	if !p.Decidable() || satisfied == nil {
		return false
	}
	for _, s := range p.Segments {
		if !satisfied(s) {
			return false
		}
	}
	return true
}

// Analyze parses command and builds its plan. It never fails: whatever it cannot
// understand becomes a reason, which makes the plan undecidable.
func Analyze(command string, env Env) *Plan {
	if env.FS == nil {
		env.FS = HostFS{}
	}
	p := &Plan{Command: command, Dir: env.Dir}
	if len(command) > MaxCommandBytes {
		p.Reasons = append(p.Reasons, Reason{CodeTooLong, fmt.Sprintf("command is %d bytes, over the %d-byte limit", len(command), MaxCommandBytes)})
		return p
	}
	if !path.IsAbs(env.Dir) {
		p.Reasons = append(p.Reasons, Reason{CodeRelPATH, fmt.Sprintf("working directory %q is not absolute", env.Dir)})
	}
	for _, kv := range env.Vars {
		name, _, _ := strings.Cut(kv, "=")
		if r, bad := dangerousVar(name); bad {
			r.Detail = "the call's environment: " + r.Detail
			p.Reasons = append(p.Reasons, r)
		}
	}
	if r, bad := controlChar(command); bad {
		p.Reasons = append(p.Reasons, r)
		return p
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		p.Reasons = append(p.Reasons, Reason{CodeParse, fmt.Sprintf("parsing command: %v", err)})
		return p
	}
	a := &analyzer{env: env, plan: p, src: command}
	a.stmts(f.Stmts, "", 0)
	if len(p.Segments) == 0 && len(p.Reasons) == 0 {
		p.Reasons = append(p.Reasons, Reason{CodeEmpty, "no command to run"})
	}
	return p
}

// controlChar rejects input a person reviewing the command could not see as it runs:
// invalid UTF-8, NUL and other control characters (tab and newline are shell syntax).
func controlChar(s string) (Reason, bool) {
	if !utf8.ValidString(s) {
		return Reason{CodeControl, "command is not valid UTF-8"}, true
	}
	for i, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
			r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') ||
			r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' {
			return Reason{CodeControl, fmt.Sprintf("control or invisible character U+%04X at byte %d", r, i)}, true
		}
	}
	return Reason{}, false
}

type analyzer struct {
	env  Env
	plan *Plan
	src  string
	full bool // limit reached; stop adding segments
}

func (a *analyzer) source(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(a.src) || s > e {
		return ""
	}
	return a.src[s:e]
}

func join(where, part string) string {
	if where == "" {
		return part
	}
	return where + "/" + part
}

func (a *analyzer) limit(depth int) bool {
	if a.full {
		return true
	}
	if depth > maxDepth || len(a.plan.Segments) >= maxSegments {
		a.full = true
		a.plan.Reasons = append(a.plan.Reasons, Reason{CodeLimit, fmt.Sprintf("command nests deeper than %d or has more than %d segments", maxDepth, maxSegments)})
		return true
	}
	return false
}

func (a *analyzer) stmts(list []*syntax.Stmt, where string, depth int) {
	for _, s := range list {
		a.stmt(s, where, depth)
	}
}

func (a *analyzer) stmt(s *syntax.Stmt, where string, depth int) {
	if s == nil || a.limit(depth) {
		return
	}
	bg := s.Background || s.Coprocess || s.Disown
	if c, ok := s.Cmd.(*syntax.CallExpr); ok {
		a.call(c, s, where, bg, depth)
		return
	}
	// Redirections on anything but a simple command apply to everything inside it; a bad
	// one makes the whole plan undecidable.
	if len(s.Redirs) > 0 {
		var seg Segment
		a.redirects(&seg, s.Redirs, where, depth)
		for _, r := range seg.Reasons {
			a.plan.Reasons = append(a.plan.Reasons, Reason{r.Code, r.Detail + " (on a compound command)"})
		}
	}
	switch c := s.Cmd.(type) {
	case nil:
		a.add(Segment{Source: a.source(s), Where: where, Background: bg,
			Reasons: []Reason{{CodeEmpty, "statement with redirections and no command"}}})
	case *syntax.BinaryCmd:
		a.stmt(c.X, where, depth+1)
		a.stmt(c.Y, where, depth+1)
	case *syntax.Subshell:
		a.stmts(c.Stmts, join(where, "subshell"), depth+1)
	case *syntax.Block:
		a.stmts(c.Stmts, join(where, "group"), depth+1)
	case *syntax.TimeClause:
		// The time keyword only measures the statement it wraps.
		if c.Stmt == nil {
			a.add(Segment{Source: a.source(s), Where: where, Reasons: []Reason{{CodeEmpty, "time with no command"}}})
			return
		}
		a.stmt(c.Stmt, where, depth+1)
	case *syntax.FuncDecl:
		// A function can shadow any command name used later, so resolution by PATH would lie.
		a.add(Segment{Source: a.source(s), Where: where, Background: bg,
			Reasons: []Reason{{CodeFunction, "defines a shell function, which can shadow any command"}}})
		a.stmt(c.Body, join(where, "function"), depth+1)
	default:
		// if/while/for/case/[[ ]]/(( ))/declare/let/coproc: their words and control flow are
		// not evaluated here, so they are undecidable; nested commands are still listed.
		a.add(Segment{Source: a.source(s), Where: where, Background: bg,
			Reasons: []Reason{{CodeCompound, fmt.Sprintf("compound command %T is not analysed", c)}}})
		a.nested(c, join(where, "compound"), depth+1)
	}
}

// nested lists the statements found anywhere under n (substitutions, loop bodies).
func (a *analyzer) nested(n syntax.Node, where string, depth int) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch x := m.(type) {
		case *syntax.CmdSubst:
			a.stmts(x.Stmts, join(where, "cmdsubst"), depth+1)
			return false
		case *syntax.ProcSubst:
			a.stmts(x.Stmts, join(where, "procsubst"), depth+1)
			return false
		case *syntax.Stmt:
			if m != n {
				a.stmt(x, where, depth+1)
				return false
			}
		}
		return true
	})
}

func (a *analyzer) add(s Segment) {
	if len(a.plan.Segments) >= maxSegments {
		a.limit(0)
		return
	}
	a.plan.Segments = append(a.plan.Segments, s)
}

// word evaluates w as the shell would when it is fully literal; otherwise it returns the
// reasons it is not. Substitutions inside it are analysed as nested segments.
func (a *analyzer) word(w *syntax.Word, where string, depth int) (string, []Reason) {
	var b strings.Builder
	var rs []Reason
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.CmdSubst:
			a.stmts(p.Stmts, join(where, "cmdsubst"), depth+1)
		case *syntax.ProcSubst:
			a.stmts(p.Stmts, join(where, "procsubst"), depth+1)
		default:
			a.nested(part, where, depth)
		}
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			rs = append(rs, a.unquotedLit(&b, p.Value, i == 0, i == len(w.Parts)-1)...)
		case *syntax.SglQuoted:
			if p.Dollar {
				rs = append(rs, Reason{CodeNonLiteral, "ANSI-C quoting $'…' is not decoded"})
				continue
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				rs = append(rs, Reason{CodeNonLiteral, `locale quoting $"…" is not decoded`})
				continue
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					dquoteLit(&b, l.Value)
					continue
				}
				rs = append(rs, Reason{CodeNonLiteral, fmt.Sprintf("expansion %q inside double quotes", a.source(q))})
			}
		case *syntax.ExtGlob:
			rs = append(rs, Reason{CodeGlob, fmt.Sprintf("extended glob %q", a.source(p))})
		default:
			rs = append(rs, Reason{CodeNonLiteral, fmt.Sprintf("expansion %q", a.source(p))})
		}
	}
	v := b.String()
	if strings.ContainsAny(v, "\n\r") {
		rs = append(rs, Reason{CodeNewline, fmt.Sprintf("newline inside the word %q", v)})
	}
	return v, rs
}

// unquotedLit appends an unquoted literal with backslash escapes removed, and reports the
// characters the shell would expand: globs, braces and tildes.
func (a *analyzer) unquotedLit(b *strings.Builder, v string, first, last bool) []Reason {
	var rs []Reason
	for j := 0; j < len(v); j++ {
		c := v[j]
		switch {
		case c == '\\':
			if j+1 < len(v) {
				j++
				if v[j] != '\n' { // backslash-newline is a line continuation
					b.WriteByte(v[j])
				}
				continue
			}
			b.WriteByte(c)
		case c == '*' || c == '?' || c == '[' && (!last || strings.Contains(v[j+1:], "]")):
			// A [ with no ] after it in the word is literal, which keeps `[ -f x ]` decidable;
			// when quoted parts follow, a ] may be among them, so it counts as a glob.
			rs = append(rs, Reason{CodeGlob, fmt.Sprintf("unquoted %q expands to file names", string(c))})
			b.WriteByte(c)
		case c == '{':
			rs = append(rs, Reason{CodeBrace, fmt.Sprintf("unquoted '{' in %q may be brace expansion", v)})
			b.WriteByte(c)
		case c == '~' && first && j == 0:
			end := strings.IndexByte(v, '/')
			if end < 0 {
				end = len(v)
			}
			switch {
			case end == len(v) && !last:
				rs = append(rs, Reason{CodeTilde, "tilde prefix continues into a quoted part"})
			case v[:end] != "~":
				rs = append(rs, Reason{CodeTilde, fmt.Sprintf("tilde prefix %q is not expanded", v[:end])})
			case a.env.HOME == "":
				rs = append(rs, Reason{CodeTilde, "~ with no HOME"})
			default:
				b.WriteString(a.env.HOME)
				continue
			}
			b.WriteByte(c)
		case c == '~' && j > 0 && (v[j-1] == '=' || v[j-1] == ':'):
			// bash expands these in assignments and assignment-like arguments.
			rs = append(rs, Reason{CodeTilde, fmt.Sprintf("tilde after %q in %q", string(v[j-1]), v)})
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return rs
}

// dquoteLit appends literal text from inside double quotes, where a backslash only escapes
// $ ` " \ and newline.
func dquoteLit(b *strings.Builder, v string) {
	for j := 0; j < len(v); j++ {
		if v[j] == '\\' && j+1 < len(v) {
			switch v[j+1] {
			case '$', '`', '"', '\\':
				j++
				b.WriteByte(v[j])
				continue
			case '\n':
				j++
				continue
			}
		}
		b.WriteByte(v[j])
	}
}

func (a *analyzer) call(c *syntax.CallExpr, s *syntax.Stmt, where string, bg bool, depth int) {
	seg := Segment{Source: a.source(s), Where: where, Background: bg}
	for _, as := range c.Assigns {
		if as.Name == nil || as.Array != nil || as.Index != nil || as.Append || as.Naked {
			seg.Reasons = append(seg.Reasons, Reason{CodeAssignment, fmt.Sprintf("assignment %q is not a plain NAME=value", a.source(as))})
			continue
		}
		val := ""
		if as.Value != nil {
			v, rs := a.word(as.Value, where, depth)
			val = v
			seg.Reasons = append(seg.Reasons, rs...)
		}
		seg.Assigns = append(seg.Assigns, as.Name.Value+"="+val)
		if r, bad := dangerousVar(as.Name.Value); bad {
			seg.Reasons = append(seg.Reasons, r)
		}
	}
	args := make([]string, len(c.Args))
	lit, nameLit := true, true
	for i, w := range c.Args {
		v, rs := a.word(w, where, depth)
		args[i] = v
		if len(rs) > 0 {
			if i == 0 {
				nameLit = false
				seg.Reasons = append(seg.Reasons, Reason{CodeNonLiteral, fmt.Sprintf("command name %q is not literal", a.source(w))})
			}
			lit = false
			seg.Reasons = append(seg.Reasons, rs...)
		}
	}
	a.redirects(&seg, s.Redirs, where, depth)
	switch {
	case len(args) == 0:
		seg.Reasons = append(seg.Reasons, Reason{CodeAssignment, "a bare assignment changes the shell for later commands"})
	case nameLit:
		// Resolve even when some argument is not literal, so the plan still names the
		// executable; the reasons already make it undecidable.
		a.execute(&seg, args, true)
	}
	if !lit {
		seg.Argv = nil
	}
	a.add(seg)
}

func (a *analyzer) redirects(seg *Segment, rs []*syntax.Redirect, where string, depth int) {
	for _, r := range rs {
		rd := Redirect{Op: r.Op.String()}
		if r.N != nil {
			rd.Fd = r.N.Value
			if strings.HasPrefix(rd.Fd, "{") {
				seg.Reasons = append(seg.Reasons, Reason{CodeRedirect, fmt.Sprintf("named file descriptor %q", rd.Fd)})
			}
		}
		if r.Word != nil {
			v, wrs := a.word(r.Word, where, depth)
			rd.Target = v
			if len(wrs) > 0 {
				seg.Reasons = append(seg.Reasons, Reason{CodeRedirect, fmt.Sprintf("redirection target %q is not literal", a.source(r.Word))})
				seg.Reasons = append(seg.Reasons, wrs...)
			}
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			// Spec §4.4: a heredoc prompts in allowlist mode; its body also feeds programs
			// such as sh or python that would run it.
			seg.Reasons = append(seg.Reasons, Reason{CodeHeredoc, fmt.Sprintf("here-document or here-string (%s)", rd.Op)})
			if r.Hdoc != nil {
				a.nested(r.Hdoc, join(where, "heredoc"), depth+1)
			}
		case syntax.RdrIn:
			if strings.HasPrefix(rd.Target, "/dev/tcp/") || strings.HasPrefix(rd.Target, "/dev/udp/") {
				seg.Reasons = append(seg.Reasons, Reason{CodeNetwork, fmt.Sprintf("bash opens a network connection for %q", rd.Target)})
			}
		case syntax.DplIn, syntax.DplOut:
			// 2>&1, >&2, <&0, >&-: duplicate or close a descriptor. With bash, >&word where
			// word is not a number or - writes a file.
			if !isFdWord(rd.Target) {
				rd.Write = r.Op == syntax.DplOut
				seg.Reasons = append(seg.Reasons, Reason{CodeRedirect, fmt.Sprintf("redirection %s%s%s to a file", rd.Fd, rd.Op, rd.Target)})
			}
		default: // > >> <> >| &> &>> and zsh forms all open the target for writing
			rd.Write = true
			if rd.Target != "/dev/null" {
				seg.Reasons = append(seg.Reasons, Reason{CodeRedirect, fmt.Sprintf("writes to %q through %s", rd.Target, rd.Op)})
			}
		}
		seg.Redirects = append(seg.Redirects, rd)
	}
}

func isFdWord(s string) bool {
	if s == "-" {
		return true
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
