package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// indexed is what the index holds about one file.
type indexed struct {
	size, mtime int64
	hash        string
}

// change is a file to (re)write in the index; rechunk is false when only
// its size and time changed, not its content.
type change struct {
	file
	hash    string
	rechunk bool
	chunks  []chunk
}

// refresh brings the agent's rows up to date with the workspace and
// returns the number of files indexed and the listing's warnings.
func (ix *Index) refresh(ctx context.Context, agent string, root *os.Root) (int, []string, error) {
	l := list(root)
	mu := ix.lock(agent)
	mu.Lock()
	defer mu.Unlock()
	old, err := ix.indexedFiles(ctx, agent)
	if err != nil {
		return 0, nil, err
	}
	var changes []change
	kept := 0
	for _, f := range l.files {
		prev, ok := old[f.path]
		delete(old, f.path)
		if ok && prev.size == f.size && prev.mtime == f.mtime {
			kept++
			continue
		}
		c, err := load(root, f)
		if err != nil {
			l.warn("%s: %v; it is not indexed", f.path, err)
			if ok {
				old[f.path] = prev // drop what was indexed of it
			}
			continue
		}
		if c.rechunk = !ok || prev.hash != c.hash; c.rechunk {
			c.chunks = chunkText(string(c.content))
		}
		c.content = nil
		changes = append(changes, c.change)
		kept++
	}
	if len(changes) > 0 || len(old) > 0 {
		if err := ix.apply(ctx, agent, changes, old); err != nil {
			return 0, nil, err
		}
	}
	return kept, l.warnings, nil
}

// indexedFiles returns what the index holds about the agent's files.
func (ix *Index) indexedFiles(ctx context.Context, agent string) (map[string]indexed, error) {
	rows, err := ix.r.QueryContext(ctx, `SELECT path, size, mtime_ns, hash FROM files WHERE agent = ?`, agent)
	if err != nil {
		return nil, fmt.Errorf("reading the memory index: %w", err)
	}
	defer rows.Close()
	m := map[string]indexed{}
	for rows.Next() {
		var p string
		var x indexed
		if err := rows.Scan(&p, &x.size, &x.mtime, &x.hash); err != nil {
			return nil, fmt.Errorf("reading the memory index: %w", err)
		}
		m[p] = x
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the memory index: %w", err)
	}
	return m, nil
}

// loaded is a file read for indexing.
type loaded struct {
	change
	content []byte
}

// load reads one file through the root. The size and time recorded are
// those before reading, so a file written meanwhile looks changed next time.
func load(root *os.Root, f file) (loaded, error) {
	fh, err := root.Open(f.path)
	if err != nil {
		return loaded{}, pathErr(err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return loaded{}, pathErr(err)
	}
	if !fi.Mode().IsRegular() {
		return loaded{}, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return loaded{}, pathErr(err)
	}
	if len(data) > MaxFileBytes {
		return loaded{}, fmt.Errorf("grew past %s while being read", sizeText(MaxFileBytes))
	}
	sum := sha256.Sum256(data)
	f.size, f.mtime = fi.Size(), fi.ModTime().UnixNano()
	return loaded{change: change{file: f, hash: hex.EncodeToString(sum[:])}, content: data}, nil
}

// apply writes the changes and drops the removed files, in one transaction.
func (ix *Index) apply(ctx context.Context, agent string, changes []change, removed map[string]indexed) error {
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("updating the memory index: %w", err)
	}
	defer tx.Rollback()
	// Each statement is prepared once per transaction: a first index
	// runs the chunk insert thousands of times.
	stmts := map[string]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	exec := func(q string, args ...any) {
		if err != nil {
			return
		}
		st, ok := stmts[q]
		if !ok {
			if st, err = tx.PrepareContext(ctx, q); err != nil {
				return
			}
			stmts[q] = st
		}
		_, err = st.ExecContext(ctx, args...)
	}
	for p := range removed {
		exec(`DELETE FROM chunks WHERE agent = ? AND path = ?`, agent, p)
		exec(`DELETE FROM files WHERE agent = ? AND path = ?`, agent, p)
	}
	for _, c := range changes {
		exec(`INSERT INTO files (agent, path, size, mtime_ns, hash) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (agent, path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash`,
			agent, c.path, c.size, c.mtime, c.hash)
		if !c.rechunk {
			continue
		}
		exec(`DELETE FROM chunks WHERE agent = ? AND path = ?`, agent, c.path)
		for _, ch := range c.chunks {
			text := strings.ToValidUTF8(ch.text, "\uFFFD")
			exec(`INSERT INTO chunks (agent, path, start_line, end_line, text, hash) VALUES (?, ?, ?, ?, ?, ?)`,
				agent, c.path, ch.start, ch.end, text, textHash(text))
		}
	}
	// Vectors of texts no chunk of the agent has any more.
	exec(`DELETE FROM vectors WHERE agent = ? AND hash NOT IN (SELECT hash FROM chunks WHERE agent = ?)`, agent, agent)
	if err != nil {
		return fmt.Errorf("updating the memory index: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("updating the memory index: %w", err)
	}
	ix.gen(agent).Add(1)
	return nil
}

// textHash is what a chunk's vector is stored by.
func textHash(text string) []byte {
	sum := sha256.Sum256([]byte(text))
	return sum[:]
}
