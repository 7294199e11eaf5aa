package analyze

import (
	"fmt"
	"path"
	"strings"
)

// execute resolves args[0] (unwrapping wrappers) and fills in seg's Name, Path, Argv and
// the reasons its real program is unsafe. shell is true while the name is looked up by the
// shell itself (builtins apply), false once a wrapper execs it (PATH only).
func (a *analyzer) execute(seg *Segment, args []string, shell bool) {
	pathVar := a.env.PATH
	for n := 0; ; n++ {
		if len(args) == 0 {
			seg.Reasons = append(seg.Reasons, Reason{CodeWrapper, "wrapper with no command to run"})
			return
		}
		if n > maxUnwrap {
			seg.Reasons = append(seg.Reasons, Reason{CodeLimit, fmt.Sprintf("more than %d nested wrappers", maxUnwrap)})
			return
		}
		name := args[0]
		seg.Name = name
		if name == "" {
			seg.Reasons = append(seg.Reasons, Reason{CodeNotFound, "empty command name"})
			return
		}
		if r, bad := oddName(name); bad {
			seg.Reasons = append(seg.Reasons, r)
			return
		}
		if shell && !strings.Contains(name, "/") {
			switch name {
			case "exec", "command":
				// Shell builtins that run their operand: unwrap without a path of their own.
				rest, rs := unwrapBuiltin(name, args)
				seg.Wrappers = append(seg.Wrappers, Wrapper{Name: name, Argv: args[:len(args)-len(rest)]})
				seg.Reasons = append(seg.Reasons, rs...)
				if len(rs) > 0 {
					return
				}
				// `command` still finds builtins; `exec` only execs programs.
				shell = name == "command"
				args = rest
				continue
			}
			if r, ok := shellOnly[name]; ok {
				seg.Reasons = append(seg.Reasons, Reason{CodeBuiltin, fmt.Sprintf("%s: %s", name, r)})
				return
			}
			// Other builtins (echo, printf, test, [, true, false, pwd, kill) behave like the
			// programs of the same name, so they resolve through PATH and the allowlist
			// decides; a name not on PATH is not found, which is a miss.
		}
		invoked, real, r := a.resolve(name, pathVar)
		if r != nil {
			seg.Reasons = append(seg.Reasons, *r)
			return
		}
		realBase, invokedBase := path.Base(real), path.Base(invoked)
		if w, ok := wrappers[realBase]; ok && realBase == invokedBase {
			rest, newPATH, rs := w(args)
			seg.Wrappers = append(seg.Wrappers, Wrapper{Name: name, Path: real, Argv: args[:len(args)-len(rest)]})
			seg.Reasons = append(seg.Reasons, rs...)
			if len(rs) > 0 {
				return
			}
			if newPATH != nil {
				pathVar = *newPATH
			}
			shell = false
			args = rest
			continue
		}
		seg.Path = real
		seg.Argv = append([]string(nil), args...)
		seg.Reasons = append(seg.Reasons, a.classify(realBase, args)...)
		if invokedBase != realBase {
			// A symlink or multi-call binary may act on the name it was called by.
			seg.Reasons = append(seg.Reasons, a.classify(invokedBase, args)...)
		}
		return
	}
}

// oddName rejects command names a reviewer could misread: non-ASCII (Cyrillic ѕ for s),
// spaces and control characters.
func oddName(name string) (Reason, bool) {
	for _, r := range name {
		if r <= ' ' || r >= 0x7f {
			return Reason{CodeNonASCII, fmt.Sprintf("command name %q contains %U, which may look like another character", name, r)}, true
		}
	}
	return Reason{}, false
}

// resolve finds name as execvp would: a name with a slash is a path relative to the
// working directory, anything else is searched in pathVar. It returns the path as invoked
// and the real path with symlinks resolved.
func (a *analyzer) resolve(name, pathVar string) (invoked, real string, _ *Reason) {
	if strings.Contains(name, "/") {
		p := name
		if !path.IsAbs(p) {
			p = a.env.Dir + "/" + p
		}
		return a.check(name, p)
	}
	for _, d := range strings.Split(pathVar, ":") {
		rel := false
		if !path.IsAbs(d) {
			// An empty or relative PATH entry means the working directory, which the agent
			// controls: a program found there is whatever the agent put there.
			rel = true
			if d == "" {
				d = "."
			}
			d = a.env.Dir + "/" + d
		}
		p := d + "/" + name
		if !a.isExec(p) {
			continue
		}
		inv, real, r := a.check(name, p)
		if r == nil && rel {
			r = &Reason{CodeRelPATH, fmt.Sprintf("%q was found through the relative PATH entry %q", name, d)}
		}
		return inv, real, r
	}
	return "", "", &Reason{CodeNotFound, fmt.Sprintf("%q is not an executable file in PATH %q", name, pathVar)}
}

// check confirms p is an executable regular file and resolves its symlinks. p is not
// cleaned first: a/../b must be resolved by the file system, not lexically.
func (a *analyzer) check(name, p string) (string, string, *Reason) {
	if !a.isExec(p) {
		return "", "", &Reason{CodeNotFound, fmt.Sprintf("%q (%s) is not an executable file", name, p)}
	}
	real, err := a.env.FS.EvalSymlinks(p)
	if err != nil {
		return "", "", &Reason{CodeNotFound, fmt.Sprintf("resolving symlinks of %s: %v", p, err)}
	}
	if !path.IsAbs(real) {
		return "", "", &Reason{CodeNotFound, fmt.Sprintf("%s resolved to the relative path %q", p, real)}
	}
	return path.Clean(p), path.Clean(real), nil
}

func (a *analyzer) isExec(p string) bool {
	fi, err := a.env.FS.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
