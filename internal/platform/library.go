package platform

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// The library follows the templates directory: every operation that
// reads a template (Library, Install, Sync) first compares a stamp of the
// directory — every entry's path, size, mode, inode and times — with the
// one it last loaded, and reloads when they differ. A stamp costs a walk
// of stat calls, no reads. File times have the kernel's coarse clock, so
// an edit within the same tick could leave a stamp equal: a stamp whose
// newest entry is under racyWindow old is not trusted, and the next
// operation reloads again (git's "racy" index rule).

// racyWindow is how recent an entry's time must be for its stamp to be
// distrusted.
const racyWindow = 2 * time.Second

// dirStamp is the state of the templates directory.
type dirStamp struct {
	sum  [sha256.Size]byte
	racy bool
	set  bool
}

// stampDir stamps the tree at root; a missing or unreadable root has a
// stamp of its own (the error), so it reloads once and reports it.
func stampDir(root string, now time.Time) dirStamp {
	h := sha256.New()
	st := dirStamp{set: true}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(h, "error %s %v\n", p, err)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			fmt.Fprintf(h, "error %s %v\n", p, err)
			return nil
		}
		mtime, ctime, ino := fi.ModTime(), time.Time{}, uint64(0)
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			ctime, ino = time.Unix(s.Ctim.Unix()), s.Ino
		}
		fmt.Fprintf(h, "%q %o %d %d %d %d\n", p, fi.Mode(), fi.Size(), mtime.UnixNano(), ctime.UnixNano(), ino)
		if now.Sub(mtime) < racyWindow || now.Sub(ctime) < racyWindow {
			st.racy = true
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(h, "error %v\n", err)
	}
	h.Sum(st.sum[:0])
	return st
}

// Reload reads the templates as they are on disk now and records each in
// the library with its content hash. A template that does not load is
// left out and reported by LoadErrors, as is an installed template whose
// directory is gone; the others are served.
func (p *Platform) Reload(ctx context.Context) error {
	p.reloading.Lock()
	defer p.reloading.Unlock()
	return p.reload(ctx, stampDir(p.o.Templates, time.Now()))
}

// refresh reloads when the templates directory changed since the last
// load (or its stamp cannot be trusted).
func (p *Platform) refresh(ctx context.Context) error {
	fresh := func(st dirStamp) bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.stamp.set && !p.stamp.racy && p.stamp.sum == st.sum
	}
	st := stampDir(p.o.Templates, time.Now())
	if fresh(st) {
		return nil
	}
	p.reloading.Lock()
	defer p.reloading.Unlock()
	st = stampDir(p.o.Templates, time.Now()) // another caller may have reloaded meanwhile
	if fresh(st) {
		return nil
	}
	return p.reload(ctx, st)
}

// reload loads the templates; st is the directory's stamp taken before
// reading it, so a change during the load shows at the next refresh.
func (p *Platform) reload(ctx context.Context, st dirStamp) error {
	list, errs := template.LoadAll(p.o.Templates)
	byslug := make(map[string]*template.Template, len(list))
	hashes := make(map[string]string, len(list))
	for _, t := range list {
		h := Hash(t)
		e := catalog.Entry{Slug: t.Slug, Name: t.Name, Description: t.Description, Emoji: t.Emoji, Category: t.Category,
			DefaultModel: t.Model, Skills: t.Skills, Public: true, TemplateHash: h}
		if err := p.o.Store.PutLibrary(ctx, e); err != nil {
			return fmt.Errorf("recording template %s in the library: %w", t.Slug, err)
		}
		byslug[t.Slug], hashes[t.Slug] = t, h
	}
	gone, err := p.goneTemplates(ctx, byslug)
	if err != nil {
		return err
	}
	errs = append(errs, gone...)
	for _, err := range errs {
		p.o.Log.Error("template", "err", err)
	}
	p.mu.Lock()
	p.templates, p.hashes, p.loadErrs, p.stamp = byslug, hashes, errs, st
	p.mu.Unlock()
	return nil
}

// goneTemplates reports installed templates whose directory is gone (a
// directory that is there but does not load is LoadAll's to report).
func (p *Platform) goneTemplates(ctx context.Context, loaded map[string]*template.Template) ([]error, error) {
	ins, err := p.o.Store.Installations(ctx, catalog.Filter{})
	if err != nil {
		return nil, fmt.Errorf("listing installations: %w", err)
	}
	count := map[string]int{}
	for _, in := range ins {
		if loaded[in.Slug] == nil {
			count[in.Slug]++
		}
	}
	var out []error
	for slug, n := range count {
		dir := filepath.Join(p.o.Templates, slug)
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			out = append(out, fmt.Errorf("template %s is installed for %d tenant(s) but %s is gone; their files stay as they are", slug, n, dir))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Error() < out[j].Error() })
	return out, nil
}

// LoadErrors are the templates the last load could not load (Library,
// Install and Sync reload when the directory changed).
func (p *Platform) LoadErrors() []error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]error(nil), p.loadErrs...)
}

// template returns the template slug as it is on disk now, with its hash.
func (p *Platform) template(ctx context.Context, slug string) (*template.Template, string, error) {
	if err := p.refresh(ctx); err != nil {
		return nil, "", err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	t, ok := p.templates[slug]
	if !ok {
		return nil, "", fmt.Errorf("%w %q", ErrNoTemplate, slug)
	}
	return t, p.hashes[slug], nil
}

// Library lists the library's entries whose templates load now, after
// reloading the templates if the directory changed; LoadErrors then says
// which do not.
func (p *Platform) Library(ctx context.Context) ([]catalog.Entry, error) {
	if err := p.refresh(ctx); err != nil {
		return nil, err
	}
	all, err := p.o.Store.Library(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.DeleteFunc(all, func(e catalog.Entry) bool { return p.templates[e.Slug] == nil }), nil
}
