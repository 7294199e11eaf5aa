package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	lpdf "github.com/ledongthuc/pdf"
)

// Limits bound one extraction, so that a hostile PDF costs at most so
// much memory and time.
type Limits struct {
	// MaxPages is how many pages are read: the first ones when no filter
	// is given, and the most a filter keeps.
	MaxPages int
	// MaxContentBytes bounds the decompressed content streams of one
	// page, and separately each font's ToUnicode map: a page past it is
	// skipped with a note, so a compression bomb costs that much.
	MaxContentBytes int64
	// MaxChars bounds the text kept of the whole document.
	MaxChars int
}

// DefaultLimits are the limits of the pdf tool bar the page count, which
// comes from config.
var DefaultLimits = Limits{MaxPages: 20, MaxContentBytes: 8 << 20, MaxChars: 200_000}

// maxTreeNodes bounds the page-tree nodes visited to find the pages, and
// maxDepth its depth: the tree is the file's, and may loop.
const (
	maxTreeNodes = 20_000
	maxDepth     = 64
)

// Document is what Extract read.
type Document struct {
	// PageCount is the number of pages the document declares.
	PageCount int
	Pages     []Page
	// Truncated says text was cut at Limits.MaxChars.
	Truncated bool
}

// Page is the text of one page, or why it could not be read.
type Page struct {
	Number int
	Text   string
	Err    string
}

// ErrEncrypted refuses an encrypted PDF. The parser accepts a right
// password but does not decrypt RC4 streams correctly (our fpdf-made test
// files gave undecodable content), so encrypted files are not read at all
// rather than read wrong.
var ErrEncrypted = errors.New("the PDF is encrypted, and Talon's pdf tool does not read encrypted PDFs (passwords are not supported); ask for an unencrypted copy")

// errCancelled aborts an interpretation in progress; it never leaves
// Extract.
var errCancelled = errors.New("cancelled")

// Extract reads the text of data's pages: those of pages (1-based) that
// exist, or the first lim.MaxPages when pages is nil. An encrypted PDF is
// ErrEncrypted. It stops between pages, and between operators of a page,
// when ctx is done. A malformed file is an error; a page that cannot be
// read is a Page with Err.
func Extract(ctx context.Context, data []byte, pages []int, lim Limits) (doc Document, err error) {
	r, err := open(data)
	if err != nil {
		return Document{}, err
	}
	var count int
	if err := guard(func() {
		count = int(min(max(r.Trailer().Key("Root").Key("Pages").Key("Count").Int64(), 0), 1<<30))
	}); err != nil {
		return Document{}, fmt.Errorf("reading the page count: %w", err)
	}
	want, err := selectPages(pages, count, lim.MaxPages)
	if err != nil {
		return Document{}, err
	}
	found, err := findPages(r, want)
	if err != nil {
		return Document{}, err
	}
	doc.PageCount = count
	budget := lim.MaxChars
	for _, n := range want {
		if err := ctx.Err(); err != nil {
			return Document{}, err
		}
		p := Page{Number: n}
		v, ok := found[n]
		if !ok {
			p.Err = "the page tree does not reach this page"
			doc.Pages = append(doc.Pages, p)
			continue
		}
		text, err := pageText(ctx, v, lim.MaxContentBytes)
		if errors.Is(err, errCancelled) {
			return Document{}, ctx.Err()
		}
		if err != nil {
			p.Err = err.Error()
		}
		if len(text) > budget {
			text, doc.Truncated = cut(text, budget), true
		}
		budget -= len(text)
		p.Text = text
		doc.Pages = append(doc.Pages, p)
		if doc.Truncated {
			break
		}
	}
	return doc, nil
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// open parses data's cross-reference table and trailer, refusing an
// encrypted file: one with a user password (the parser asks for it), and
// one that opens without (the trailer names its /Encrypt).
func open(data []byte) (*lpdf.Reader, error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, errors.New("not a PDF: the file does not start with %PDF-")
	}
	var r *lpdf.Reader
	encrypted := false
	err := guard(func() {
		var err error
		if r, err = lpdf.NewReaderEncrypted(version17(data), int64(len(data)), nil); err != nil {
			panic(err)
		}
		encrypted = r.Trailer().Key("Encrypt").Kind() != lpdf.Null
	})
	switch {
	case errors.Is(err, lpdf.ErrInvalidPassword) || encrypted:
		return nil, ErrEncrypted
	case err != nil:
		return nil, fmt.Errorf("the PDF cannot be read: %w", err)
	}
	return r, nil
}

// version17 presents a PDF 2.0 file as 1.7: the parser accepts only 1.x
// headers, and nothing else it reads differs for text.
func version17(data []byte) io.ReaderAt {
	r := bytes.NewReader(data)
	if len(data) < 9 || string(data[:8]) != "%PDF-2.0" {
		return r
	}
	return headerAt{r}
}

type headerAt struct{ *bytes.Reader }

func (h headerAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.Reader.ReadAt(p, off)
	for i := range p[:n] {
		switch off + int64(i) {
		case 5:
			p[i] = '1'
		case 7:
			p[i] = '7'
		}
	}
	return n, err
}

// selectPages is the pages to read: the filter's that exist, or the first
// limit. A filter that keeps no page of the document is an error.
func selectPages(filter []int, count, limit int) ([]int, error) {
	if count == 0 {
		return nil, errors.New("the PDF declares no pages")
	}
	if filter == nil {
		out := make([]int, min(count, limit))
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	}
	var out []int
	for _, n := range filter {
		if n >= 1 && n <= count && len(out) < limit {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no requested PDF pages exist in this %d-page document", count)
	}
	return out, nil
}

// findPages walks the page tree in order to the pages in want (sorted),
// visiting at most maxTreeNodes nodes at most maxDepth deep.
func findPages(r *lpdf.Reader, want []int) (map[int]lpdf.Value, error) {
	found := map[int]lpdf.Value{}
	last := want[len(want)-1]
	need := map[int]bool{}
	for _, n := range want {
		need[n] = true
	}
	page, visited := 0, 0
	var walk func(v lpdf.Value, depth int) error
	walk = func(v lpdf.Value, depth int) error {
		if visited++; visited > maxTreeNodes {
			return fmt.Errorf("the page tree has more than %d nodes before page %d", maxTreeNodes, last)
		}
		if depth > maxDepth {
			return fmt.Errorf("the page tree is deeper than %d levels (it may loop)", maxDepth)
		}
		kids := v.Key("Kids")
		if v.Key("Type").Name() != "Pages" && kids.Kind() != lpdf.Array {
			page++
			if need[page] {
				found[page] = v
			}
			return nil
		}
		for i := 0; i < kids.Len() && page < last; i++ {
			if err := walk(kids.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	var werr error
	if err := guard(func() { werr = walk(r.Trailer().Key("Root").Key("Pages"), 0) }); err != nil {
		return nil, fmt.Errorf("reading the page tree: %w", err)
	}
	if werr != nil {
		return nil, fmt.Errorf("reading the page tree: %w", werr)
	}
	return found, nil
}

// guard runs f, turning a panic of the parser (its way to report a
// malformed file) into an error.
func guard(f func()) (err error) {
	defer func() {
		if x := recover(); x != nil {
			switch e := x.(type) {
			case error:
				err = e
			default:
				err = fmt.Errorf("malformed PDF: %v", x)
			}
		}
	}()
	f()
	return nil
}
