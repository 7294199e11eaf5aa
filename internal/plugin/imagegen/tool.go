package imagegen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/netguard"
	"talon/internal/provider"
	"talon/internal/tools"
)

// MaxPrompt is the longest prompt, in characters.
const MaxPrompt = 4000

// maxImages bounds how many images of one answer are saved.
const maxImages = 4

// maxText bounds the model's text passed on with the result.
const maxText = 4000

// AspectRatios are the image_config.aspect_ratio values OpenRouter documents
// for Gemini image models.
var AspectRatios = []string{"1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"}

// Tool is the generate_image tool.
type Tool struct {
	cfg     Config
	env     func(string) (string, bool)
	client  *http.Client
	url     string
	retries int // temporary failures retried per call
}

var _ tools.Tool = (*Tool)(nil)

// New returns the tool for cfg (zero fields take their defaults). env looks
// up the API key named by cfg.APIKeyEnv at each call; nil means the process
// environment. It does no I/O.
func New(cfg Config, env func(string) (string, bool)) (*Tool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if env == nil {
		env = os.LookupEnv
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	return &Tool{
		cfg: cfg, env: env,
		client: newClient(cfg),
		url:    base + "/chat/completions", retries: provider.DefaultMaxRetries,
	}, nil
}

// Guard makes the tool reach its endpoint through netguard with opts, at
// every connect and through no proxy: a tenant's configured endpoint is
// input, and must not lead to a private address.
func (t *Tool) Guard(opts netguard.Options) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy, tr.DialContext = nil, netguard.NewDialer(opts).DialContext
	t.client.Transport = tr
}

// newClient is a plain client for the configured endpoint, following a
// redirect only to the same scheme and host, where the API key may go. The
// call's context carries its deadline; the client's own timeout is a
// backstop a little later, so the context's clearer error wins.
func newClient(cfg Config) *http.Client {
	return &http.Client{
		Timeout: cfg.timeout() + 10*time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				return fmt.Errorf("refusing a redirect from %s to another host (%s)", first.Host, req.URL.Redacted())
			}
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			return nil
		},
	}
}

var schema = tools.Object(
	tools.Prop{Name: "prompt", Type: tools.TypeString, Required: true,
		Description: fmt.Sprintf("What to draw: a detailed description of the image (subject, setting, style, colours, composition). At most %d characters.", MaxPrompt)},
	tools.Prop{Name: "filename", Type: tools.TypeString,
		Description: fmt.Sprintf(`Base name for the file in %s/, without directory or extension: lower-case letters, digits, '.', '_' and '-', e.g. "sunset-over-hills". The extension (.png, .jpg or .webp) follows the image's format; an existing file is never replaced (a suffix such as -2 is added). Default: a name made from the prompt.`, CanvasDir)},
	tools.Prop{Name: "aspectRatio", Type: tools.TypeString, Enum: AspectRatios,
		Description: `Width:height of the image, e.g. "16:9" for landscape or "9:16" for portrait. Default: the model's own (usually square).`},
)

func (*Tool) Name() string { return ToolName }

func (*Tool) Description() string {
	return "Generate an image from a text description with an image model (OpenRouter) and save it in the workspace's " +
		CanvasDir + "/ directory. Returns the saved file's path, format, size and dimensions, and any text the model added."
}

func (*Tool) Schema() json.RawMessage { return schema }

// Run generates and saves the image.
func (t *Tool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil || env.Workspace == nil {
		return tools.Result{}, errors.New("running generate_image: no workspace in the tool environment")
	}
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	prompt, err := a.String("prompt", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch prompt = strings.TrimSpace(prompt); {
	case prompt == "":
		return tools.Errorf(`argument "prompt" must describe the image; it is empty`), nil
	case !utf8.ValidString(prompt) || strings.IndexByte(prompt, 0) >= 0:
		return tools.Errorf(`argument "prompt" must be text (it is not valid UTF-8 or contains a NUL byte)`), nil
	case utf8.RuneCountInString(prompt) > MaxPrompt:
		return tools.Errorf(`argument "prompt" is %d characters; at most %d`, utf8.RuneCountInString(prompt), MaxPrompt), nil
	}
	base := ""
	if a.Has("filename") {
		name, err := a.String("filename", false)
		if err != nil {
			return tools.ErrorResult(err), nil
		}
		if base, err = checkFilename(name); err != nil {
			return tools.ErrorResult(err), nil
		}
	}
	aspect, err := a.StringEnum("aspectRatio", false, AspectRatios...)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if env.ReadOnly {
		return tools.Errorf("image-gen: the workspace is read-only in this sandbox (workspaceAccess ro), so no image can be saved; nothing was generated"), nil
	}
	key, ok := t.env(t.cfg.APIKeyEnv)
	if !ok || strings.TrimSpace(key) == "" {
		return tools.Errorf("image-gen: %s is not set (set it in the config's env or the gateway's environment)", t.cfg.APIKeyEnv), nil
	}
	ans, err := t.generate(ctx, strings.TrimSpace(key), prompt, aspect)
	var ce *callError
	if errors.As(err, &ce) {
		return tools.Errorf("%s", ce.msg), nil
	}
	if err != nil {
		return tools.Result{}, err
	}
	if base == "" {
		base = nameFromPrompt(prompt)
	}
	return t.store(env.Workspace, base, ans), nil
}

// store saves the answer's images and words the result.
func (t *Tool) store(root *os.Root, base string, ans answer) tools.Result {
	var saved, problems []string
	for i, u := range ans.urls {
		if i == maxImages {
			problems = append(problems, fmt.Sprintf("%d more images were not saved (at most %d per call)", len(ans.urls)-maxImages, maxImages))
			break
		}
		if lower := strings.ToLower(u); strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
			problems = append(problems, fmt.Sprintf("image %d is a remote URL (%s), which generate_image does not download", i+1, truncate(u, 200)))
			continue
		}
		pic, err := decodeDataURL(u)
		if err != nil {
			problems = append(problems, fmt.Sprintf("image %d is unusable: %v", i+1, err))
			continue
		}
		name := base
		if len(saved) > 0 {
			name = fmt.Sprintf("%s-%d", base, len(saved)+1)
		}
		p, err := save(root, name, pic)
		if err != nil {
			problems = append(problems, fmt.Sprintf("image %d could not be saved: %v", i+1, err))
			continue
		}
		saved = append(saved, fmt.Sprintf("Saved %s (%s, %d bytes, %dx%d)", p, pic.mime, len(pic.data), pic.width, pic.height))
	}
	var b strings.Builder
	if len(saved) == 0 {
		b.WriteString("image-gen: no image was saved: ")
		if len(ans.urls) == 0 {
			fmt.Fprintf(&b, "the model %s answered without an image (finish_reason %q); try a more explicit prompt asking for a picture", t.cfg.Model, ans.finishReason)
		}
	}
	for _, s := range saved {
		b.WriteString(s + "\n")
	}
	if len(problems) > 0 {
		if len(saved) > 0 {
			b.WriteString("Not saved: ")
		}
		b.WriteString(strings.Join(problems, "; ") + "\n")
	}
	if ans.text != "" {
		b.WriteString("\nModel's text: " + truncate(ans.text, maxText))
	}
	return tools.Result{Text: strings.TrimSpace(b.String()), IsError: len(saved) == 0}
}
