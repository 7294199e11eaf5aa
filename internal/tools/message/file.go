package message

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"talon/internal/netguard"
	"talon/internal/tools"
)

// fetchTimeout bounds the download of sendAttachment's URL.
const fetchTimeout = 60 * time.Second

// load reads sendAttachment's file: base64 bytes, a public URL (through
// the network guard, never from a sandboxed session), or a file in the
// workspace.
func load(ctx context.Context, env *tools.Env, ref fileRef) (*tools.Attachment, error) {
	var data []byte
	var name, typ string
	var err error
	switch lower := strings.ToLower(ref.media); {
	case ref.buffer != "":
		if base64.StdEncoding.DecodedLen(len(ref.buffer)) > MaxFile+2 {
			return nil, fmt.Errorf("buffer: over %d MiB", MaxFile>>20)
		}
		if data, err = base64.StdEncoding.DecodeString(strings.TrimSpace(ref.buffer)); err != nil {
			return nil, fmt.Errorf("buffer: not base64: %w", err)
		}
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		if env.Sandboxed {
			return nil, errors.New("a sandboxed session sends files from its workspace only: download the file into the workspace, then pass its path")
		}
		if data, typ, err = fetch(ctx, env, ref.media); err != nil {
			return nil, err
		}
		if u, perr := url.Parse(ref.media); perr == nil {
			name = path.Base(u.Path)
		}
	default:
		if env.Workspace == nil {
			return nil, errors.New("this run has no workspace to read the file from")
		}
		p, err := tools.FilePath(env, "media", ref.media)
		if err != nil {
			return nil, err
		}
		if data, err = tools.ReadFile(env.Workspace, p, MaxFile); err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		name = path.Base(p)
	}
	if len(data) == 0 {
		return nil, errors.New("the file is empty")
	}
	if ref.name != "" {
		name = ref.name
	}
	name = tools.BaseName(name)
	mt, err := mimeOf(ref.mime, typ, name, data)
	if err != nil {
		return nil, err
	}
	return &tools.Attachment{Name: name, MIME: mt, Data: data}, nil
}

// fetch downloads a public URL, at most MaxFile bytes.
func fetch(ctx context.Context, env *tools.Env, raw string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, "", fmt.Errorf("media: %w", err)
	}
	client := netguard.NewClient(netguard.Options{AllowLoopback: env.AllowLoopback, Timeout: fetchTimeout})
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("fetching %s: %w", raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("fetching %s: %s", raw, resp.Status)
	}
	if resp.ContentLength > MaxFile {
		return nil, "", fmt.Errorf("fetching %s: %d bytes, over %d MiB", raw, resp.ContentLength, MaxFile>>20)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxFile+1))
	if err != nil {
		return nil, "", fmt.Errorf("fetching %s: %w", raw, err)
	}
	if len(data) > MaxFile {
		return nil, "", fmt.Errorf("fetching %s: over %d MiB", raw, MaxFile>>20)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// mimeOf is the file's MIME type: the model's, the server's, the name's
// extension's, else sniffed from the content.
func mimeOf(given, served, name string, data []byte) (string, error) {
	if given != "" {
		mt, _, err := mime.ParseMediaType(given)
		if err != nil || !strings.Contains(mt, "/") {
			return "", fmt.Errorf("contentType %q is not a MIME type", given)
		}
		return mt, nil
	}
	for _, c := range []string{served, mime.TypeByExtension(path.Ext(name)), http.DetectContentType(data)} {
		if mt, _, err := mime.ParseMediaType(c); err == nil && strings.Contains(mt, "/") && mt != "application/octet-stream" {
			return mt, nil
		}
	}
	return "application/octet-stream", nil
}
