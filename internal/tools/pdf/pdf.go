// Package pdf holds the pdf tool: it reads PDF documents — files in the
// workspace (through its os.Root, which in a sandboxed session is the
// sandbox's view) or http(s) URLs fetched through the tenant's network
// rule — and returns the text of their pages, with OpenClaw's arguments
// (pdf, pdfs, pages, prompt, password, model, maxBytesMb) and limits
// (agents.defaults.pdfMaxMb, pdfMaxPages, ten PDFs a call).
//
// As OpenClaw's, the tool hands the documents with the prompt to a model
// that reads PDFs itself (tools.Env.Documents: the call's model,
// agents.defaults.pdfModel, or the run's own model when it is one — in
// Talon, Anthropic's API) and returns its answer. Otherwise, or for a page
// range, it returns the extracted text to the calling model: Go has no
// pure-Go PDF renderer for page images, so a model that reads only text
// and images gets the text.
//
// Extraction parses with github.com/ledongthuc/pdf (pure Go; pdfcpu, the
// other candidate, has no text extraction) and interprets the content
// and fonts itself within bounds (extract.go), since the file is hostile.
// It runs in a child process of the same binary (child.go), under CPU,
// memory and time limits and Landlock, because the parser can loop or
// crash on a hostile file in ways no goroutine can be stopped from.
//
// The tool is stateless and safe for concurrent use.
package pdf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path"
	"strings"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/tools"
)

// Limits of one call, as OpenClaw's.
const (
	// MaxPDFs is how many documents one call reads.
	MaxPDFs = 10
	// DefaultPrompt is OpenClaw's prompt when the call gives none.
	DefaultPrompt = "Analyze this PDF document."
	maxPrompt     = 16 << 10
)

// ErrSandboxedURL is OpenClaw's refusal of a remote URL in a sandbox.
var ErrSandboxedURL = errors.New("Sandboxed PDF tool does not allow remote URLs.")

type pdfTool struct {
	// child runs extraction; nil: DefaultChild.
	child *Child
}

var _ tools.Tool = (*pdfTool)(nil)

// New returns the pdf tool.
func New() tools.Tool { return &pdfTool{} }

var schema = tools.Object(
	tools.Prop{Name: "prompt", Type: tools.TypeString,
		Description: `What to look for in the PDF; default "` + DefaultPrompt + `". It heads the extracted text.`},
	tools.Prop{Name: "pdf", Type: tools.TypeString,
		Description: `One PDF path/URL: a path in the workspace, file://, or http(s) URL.`},
	tools.Prop{Name: "pdfs", Type: tools.TypeArray,
		Description: fmt.Sprintf("PDF paths/URLs; max %d.", MaxPDFs)},
	tools.Prop{Name: "pages", Type: tools.TypeString,
		Description: `Pages, e.g. "1-5", "1,3,5-7"; default all (up to the page limit).`},
	tools.Prop{Name: "password", Type: tools.TypeString,
		Description: "Not supported: Talon does not read encrypted PDFs."},
	tools.Prop{Name: "model", Type: tools.TypeString,
		Description: "Model override in provider/model form: a model that reads PDFs itself (Anthropic). Without one, the extracted text is returned."},
	tools.Prop{Name: "maxBytesMb", Type: tools.TypeNumber,
		Description: fmt.Sprintf("Per-PDF size cap in MB, above 0 and at most %d; default agents.defaults.pdfMaxMb or %d.", config.MaxPDFMaxMb, config.DefaultPDFMaxMb)},
)

func (*pdfTool) Name() string { return "pdf" }

func (*pdfTool) Description() string {
	return "Read PDF(s) and return the text of their pages. pdf one; pdfs max 10; " +
		"`pages` selects a page range (\"1-5\", \"1,3,5-7\"). Encrypted PDFs are not supported. " +
		"Scanned pages without a text layer give no text."
}

func (*pdfTool) Schema() json.RawMessage { return schema }

// call is one checked call.
type call struct {
	refs     []string
	prompt   string
	model    string
	password string // checked but unused: encrypted PDFs are refused
	pages    []int  // nil: the first maxPages
	maxBytes int64
	maxPages int
}

func (t *pdfTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil || env.Workspace == nil {
		return tools.Result{}, errors.New("running pdf: no workspace in the tool environment")
	}
	c, err := parse(env, raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	var docs []loaded
	for _, ref := range c.refs {
		data, err := load(ctx, env, ref, c.maxBytes)
		if err != nil {
			if ctx.Err() != nil {
				return tools.Result{}, ctx.Err()
			}
			return tools.ErrorResult(err), nil
		}
		docs = append(docs, loaded{ref: ref, data: data})
	}
	// A model that reads PDFs itself gets them whole, with the prompt, and
	// its answer is the result (OpenClaw's native path); a page range, or
	// a model call that fails, falls back to the text.
	note := ""
	if env.Documents != nil && c.pages == nil {
		ds := make([]llm.Document, len(docs))
		for i, d := range docs {
			ds[i] = llm.Document{Name: path.Base(d.ref), MIME: "application/pdf", Data: d.data}
		}
		answer, err := env.Documents(ctx, c.prompt, c.model, ds)
		if err == nil {
			return tools.Result{Text: answer}, nil
		}
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		note = fmt.Sprintf("The PDF model could not read the document (%v); its extracted text follows.\n", err)
		c.model = ""
	}
	child := t.child
	if child == nil {
		ch, err := DefaultChild()
		if err != nil {
			return tools.Result{}, fmt.Errorf("running pdf: %w", err)
		}
		child = &ch
	}
	lim := DefaultLimits
	lim.MaxPages = c.maxPages
	out, err := render(ctx, c, docs, lim, child.Extract)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.ErrorResult(err), nil
	}
	return tools.Result{Text: note + out}, nil
}

// parse checks the arguments, with config's defaults and ceilings.
func parse(env *tools.Env, raw json.RawMessage) (call, error) {
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return call{}, err
	}
	var c call
	one, err := a.String("pdf", false)
	if err != nil {
		return call{}, err
	}
	many, err := a.StringList("pdfs", false)
	if err != nil {
		return call{}, err
	}
	seen := map[string]bool{}
	for _, r := range append([]string{one}, many...) {
		if r = strings.TrimSpace(r); r != "" && !seen[r] {
			seen[r] = true
			c.refs = append(c.refs, r)
		}
	}
	switch {
	case len(c.refs) == 0:
		return call{}, errors.New("pdf required: provide a path or URL to a PDF document")
	case len(c.refs) > MaxPDFs:
		return call{}, fmt.Errorf("Too many PDFs: %d provided, maximum is %d. Please reduce the number.", len(c.refs), MaxPDFs)
	}
	for _, k := range []struct {
		name string
		dst  *string
	}{{"prompt", &c.prompt}, {"model", &c.model}, {"password", &c.password}} {
		if *k.dst, err = a.String(k.name, false); err != nil {
			return call{}, err
		}
	}
	if c.prompt = strings.TrimSpace(c.prompt); c.prompt == "" {
		c.prompt = DefaultPrompt
	} else if len(c.prompt) > maxPrompt {
		return call{}, fmt.Errorf(`argument "prompt" is %d bytes; the limit is %d`, len(c.prompt), maxPrompt)
	}
	var defaults *config.AgentDefaults
	if env.Config != nil {
		defaults = &env.Config.Agents.Defaults
	}
	c.maxBytes, c.maxPages = defaults.PDFMaxBytes(), defaults.PDFMaxPageCount()
	if a.Has("maxBytesMb") {
		mb, err := a.Number("maxBytesMb", false)
		if err != nil {
			return call{}, err
		}
		if !(mb > 0) || mb > config.MaxPDFMaxMb {
			return call{}, fmt.Errorf(`argument "maxBytesMb" must be above 0 and at most %d`, config.MaxPDFMaxMb)
		}
		c.maxBytes = int64(math.Floor(mb * (1 << 20)))
	}
	if p, err := a.String("pages", false); err != nil {
		return call{}, err
	} else if p = strings.TrimSpace(p); p != "" {
		if c.pages, err = ParsePages(p, c.maxPages); err != nil {
			return call{}, err
		}
	}
	return c, nil
}

// loaded is one document read.
type loaded struct {
	ref  string
	data []byte
}

// load reads the PDF ref names: a workspace file or an http(s) URL.
func load(ctx context.Context, env *tools.Env, ref string, maxBytes int64) ([]byte, error) {
	lower := strings.ToLower(ref)
	var data []byte
	if strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
		if env.Sandboxed {
			return nil, ErrSandboxedURL
		}
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("PDF URL %q cannot be read", ref)
		}
		if data, err = fetch(ctx, env, u, maxBytes); err != nil {
			return nil, fmt.Errorf("PDF %s: %w", ref, err)
		}
	} else {
		if u, err := url.Parse(ref); err == nil && len(u.Scheme) > 1 && !strings.EqualFold(u.Scheme, "file") {
			return nil, fmt.Errorf("Unsupported PDF reference: %s. Use a file path, file:// URL, or http(s) URL.", ref)
		}
		p, err := tools.FilePath(env, "pdf", ref)
		if err != nil {
			return nil, err
		}
		if data, err = tools.ReadFile(env.Workspace, p, maxBytes); err != nil {
			return nil, fmt.Errorf("PDF %q: %w", ref, err)
		}
	}
	if !strings.HasPrefix(string(data[:min(len(data), 5)]), "%PDF-") {
		return nil, fmt.Errorf("Expected PDF but got %s: %s", http.DetectContentType(data), ref)
	}
	return data, nil
}

// extractFunc is Extract, or Child.Extract.
type extractFunc func(ctx context.Context, data []byte, pages []int, lim Limits) (Document, error)

// render extracts each document's pages and lays out the result: a
// heading per document, then each page's text, within lim.MaxChars in all.
func render(ctx context.Context, c call, docs []loaded, lim Limits, extract extractFunc) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Prompt: %s\n", c.prompt)
	if c.model != "" {
		fmt.Fprintf(&b, "Model %q was not called: no model that reads PDFs itself is configured (agents.defaults.pdfModel), so here is the extracted text, for you to answer from.\n", c.model)
	}
	budget := lim.MaxChars
	for i, d := range docs {
		lim.MaxChars = budget
		doc, err := extract(ctx, d.data, c.pages, lim)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("PDF %q: %w", d.ref, err)
		}
		label := "[PDF text]"
		if len(docs) > 1 {
			label = fmt.Sprintf("[PDF %d text]", i+1)
		}
		fmt.Fprintf(&b, "\n%s %s: %d bytes, %d pages; %s\n", label, d.ref, len(d.data), doc.PageCount, pageSpan(doc))
		for _, p := range doc.Pages {
			fmt.Fprintf(&b, "\n--- page %d ---\n", p.Number)
			switch {
			case p.Err != "":
				fmt.Fprintf(&b, "(page not read: %s)\n", p.Err)
			case p.Text == "":
				b.WriteString("(no extractable text on this page; it may be a scanned image)\n")
			default:
				b.WriteString(p.Text)
				b.WriteByte('\n')
			}
			budget -= len(p.Text)
		}
		if doc.Truncated || budget <= 0 {
			fmt.Fprintf(&b, "\n[text truncated at %d characters; ask for fewer pages with \"pages\"]\n", DefaultLimits.MaxChars)
			break
		}
	}
	return b.String(), nil
}

// pageSpan says which pages a document's text covers.
func pageSpan(d Document) string {
	if len(d.Pages) == 0 {
		return "no pages read"
	}
	nums := make([]string, len(d.Pages))
	for i, p := range d.Pages {
		nums[i] = fmt.Sprint(p.Number)
	}
	return "text of pages " + strings.Join(nums, ",")
}
