package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// maxEntries bounds how much of skills/ is listed, so a directory with a
// million entries cannot stall every run.
const maxEntries = 10000

// reserved are command names a skill cannot take: "/skill <name> args" is
// the generic form that reaches any skill.
var reserved = map[string]bool{"skill": true}

// Set is the skills of one workspace, sorted by name. The zero Set is
// empty. It is immutable.
type Set struct {
	skills []Skill
}

// All returns the skills, sorted by name.
func (s Set) All() []Skill { return slices.Clone(s.skills) }

// Len is the number of skills.
func (s Set) Len() int { return len(s.skills) }

// Get returns the skill with this name.
func (s Set) Get(name string) (Skill, bool) {
	i, ok := slices.BinarySearchFunc(s.skills, name, func(k Skill, n string) int { return strings.Compare(k.Name, n) })
	if !ok {
		return Skill{}, false
	}
	return s.skills[i], true
}

// Load reads every skills/<dir>/SKILL.md of the workspace root, in
// directory-name order. A workspace without skills/ has no skills and no
// warnings. Each skill that cannot be used is left out and reported; so is
// anything in skills/ that is not a skill directory (hidden entries are
// skipped quietly). Paths go through root, so a symlink that leads out of
// the workspace is refused. With a nil root the set is empty.
func Load(root *os.Root) (Set, []Warning) {
	if root == nil {
		return Set{}, nil
	}
	names, warns := listDir(root)
	var set Set
	byName := map[string]string{}
	commands := map[string]bool{}
	for i, dir := range names {
		if len(set.skills) == MaxSkills {
			left := names[i:]
			warns = append(warns, Warning{Path: Dir, Reason: fmt.Sprintf(
				"more than %d skills: %d directories left unread, from %q to %q", MaxSkills, len(left), left[0], left[len(left)-1])})
			break
		}
		file := Dir + "/" + dir + "/" + FileName
		data, err := readFile(root, file)
		if err != nil {
			warns = append(warns, Warning{Path: file, Reason: err.Error()})
			continue
		}
		s, err := parseCached(file, data)
		if err != nil {
			warns = append(warns, asWarning(file, err))
			continue
		}
		if other, dup := byName[s.Name]; dup {
			warns = append(warns, Warning{Path: file, Reason: fmt.Sprintf("name %q is already taken by %s", s.Name, other)})
			continue
		}
		byName[s.Name] = file
		s.Command = uniqueCommand(s.Command, commands)
		commands[s.Command] = true
		set.skills = append(set.skills, s)
	}
	slices.SortFunc(set.skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return set, warns
}

// listDir returns the sorted names of the directories under skills/ that
// may hold a skill, with warnings for entries that cannot.
func listDir(root *os.Root) ([]string, []Warning) {
	d, err := root.Open(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []Warning{{Path: Dir, Reason: fmt.Sprintf("cannot open: %v", err)}}
	}
	defer d.Close()
	entries, err := d.ReadDir(maxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, []Warning{{Path: Dir, Reason: fmt.Sprintf("cannot list: %v", err)}}
	}
	var warns []Warning
	if len(entries) > maxEntries {
		entries = entries[:maxEntries]
		warns = append(warns, Warning{Path: Dir, Reason: fmt.Sprintf("more than %d entries: only %d of them were looked at", maxEntries, maxEntries)})
	}
	var names []string
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case strings.ContainsFunc(e.Name(), unicode.IsControl) || !utf8.ValidString(e.Name()):
			// The path goes into the prompt; a line break there would let a
			// directory name write prompt lines of its own.
			warns = append(warns, Warning{Path: fmt.Sprintf("%s/%q", Dir, e.Name()), Reason: "directory name has control characters or is not UTF-8"})
		case e.IsDir() || e.Type()&fs.ModeSymlink != 0:
			names = append(names, e.Name())
		default:
			warns = append(warns, Warning{Path: Dir + "/" + e.Name(), Reason: "not a directory: a skill is a directory holding " + FileName})
		}
	}
	slices.Sort(names)
	return names, warns
}

// readFile reads a regular file of at most MaxFileSize bytes through root.
// O_NONBLOCK keeps a FIFO planted in the workspace from blocking the open.
func readFile(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s in this directory (the name is case-sensitive, and nested folders are not searched)", FileName)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot stat: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than the %d allowed", fi.Size(), MaxFileSize)
	}
	// One byte over the cap lets Parse see a file that grew meanwhile.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	return data, nil
}

func asWarning(file string, err error) Warning {
	var w Warning
	if errors.As(err, &w) {
		return w
	}
	return Warning{Path: file, Reason: err.Error()}
}

// uniqueCommand adds "_2", "_3", … to a command that is reserved or taken,
// cutting the base so the result stays within maxCommandLen.
func uniqueCommand(base string, used map[string]bool) string {
	if !used[base] && !reserved[base] {
		return base
	}
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("_%d", i)
		c := strings.TrimRight(base[:min(len(base), maxCommandLen-len(suffix))], "_") + suffix
		if !used[c] && !reserved[c] {
			return c
		}
	}
}
