package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"talon/internal/netguard"
)

// fetched is one response, its body read up to MaxBodyBytes.
type fetched struct {
	finalURL    *url.URL
	status      int
	statusText  string // as in "404 Not Found"
	contentType string // the header as the server sent it
	mediaType   string // from the header, or sniffed when it has none
	body        []byte
	capped      bool // the body was longer than MaxBodyBytes
}

func ok2xx(status int) bool { return status >= 200 && status <= 299 }

// get fetches u with client. Every error it returns is for the model: a
// refused address, a timeout, a connection failure, a body it cannot read.
// A declared content type the tool cannot read is refused before the body
// is downloaded.
func (t *fetchTool) get(ctx context.Context, client *http.Client, u *url.URL) (fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fetched{}, fmt.Errorf("web_fetch %s: building the request: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return fetched{}, t.describe(ctx, u, "", err)
	}
	defer resp.Body.Close()
	f := fetched{finalURL: resp.Request.URL, status: resp.StatusCode, statusText: resp.Status,
		contentType: resp.Header.Get("Content-Type")}
	f.mediaType = parseMediaType(f.contentType)
	if f.mediaType != "" && kindOf(f.mediaType) == kindUnsupported {
		if ok2xx(f.status) {
			return fetched{}, fmt.Errorf("web_fetch %s: unsupported content type %s; web_fetch reads HTML, text and JSON", f.finalURL, f.mediaType)
		}
		return f, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return fetched{}, t.describe(ctx, f.finalURL, "reading the body: ", err)
	}
	if len(body) > MaxBodyBytes {
		body, f.capped = body[:MaxBodyBytes], true
	}
	f.body = body
	if f.mediaType == "" {
		f.mediaType = parseMediaType(http.DetectContentType(body))
	}
	return f, nil
}

// parseMediaType is the lower-case media type of a Content-Type value,
// "" when there is none.
func parseMediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return ""
	}
	return mt
}

// describe turns a client error into one the model can act on, quoting the
// network guard's reason for a refused address.
func (t *fetchTool) describe(ctx context.Context, u *url.URL, step string, err error) error {
	where := ""
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != u.String() {
		where = " (following a redirect to " + ue.URL + ")"
	}
	var refused *netguard.RefusedError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("web_fetch %s%s: %s%v; web_fetch does not reach private, loopback, link-local or cloud metadata addresses, or local names",
			u, where, step, refused)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("web_fetch %s: %scancelled", u, step)
	case ctx.Err() != nil:
		return fmt.Errorf("web_fetch %s%s: %sthe run's time ran out", u, where, step)
	case errors.Is(err, context.DeadlineExceeded) || (ue != nil && ue.Timeout()):
		return fmt.Errorf("web_fetch %s%s: %stimed out after %s", u, where, step, t.timeout)
	}
	if ue != nil {
		err = ue.Err // its text repeats the method and URL
	}
	return fmt.Errorf("web_fetch %s%s: %s%v", u, where, step, err)
}
