package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiVersion is the Engine API version the requests are written for:
// Docker 20.10 (Debian bookworm's docker.io). Newer engines still answer
// it; an engine that no longer does is spoken to at its oldest version.
const apiVersion = "1.41"

// minAPIVersion is the oldest engine API with every field the backend
// sets (Init, Mounts, PidsLimit, Ulimits).
const minAPIVersion = "1.40"

// engine is a client of one Docker engine over its unix socket. The
// requests are plain JSON over HTTP; exec streams are read from the
// hijacked connection directly.
type engine struct {
	socket string
	http   *http.Client

	mu      sync.Mutex
	version string // negotiated API version, "" until negotiated
}

func newEngine(socket string) *engine {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	return &engine{
		socket: socket,
		http: &http.Client{Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}},
	}
}

// apiError is an answer of the engine with a status >= 400.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("docker engine: %s (HTTP %d)", e.message, e.status)
}

func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == status
}

// negotiate picks the API version once: apiVersion when the engine
// supports it, else the nearest one it supports.
func (e *engine) negotiate(ctx context.Context) (string, error) {
	e.mu.Lock()
	v := e.version
	e.mu.Unlock()
	if v != "" {
		return v, nil
	}
	var ver struct {
		Version       string
		APIVersion    string `json:"ApiVersion"`
		MinAPIVersion string `json:"MinAPIVersion"`
	}
	if err := e.doJSON(ctx, "GET", "/version", nil, nil, &ver); err != nil {
		return "", err
	}
	v = apiVersion
	switch {
	case ver.APIVersion == "":
		return "", fmt.Errorf("docker engine %s did not say its API version", ver.Version)
	case versionLess(ver.APIVersion, minAPIVersion):
		return "", fmt.Errorf("docker engine %s speaks API %s; Talon needs %s or newer: upgrade docker", ver.Version, ver.APIVersion, minAPIVersion)
	case versionLess(ver.APIVersion, v):
		v = ver.APIVersion
	case ver.MinAPIVersion != "" && versionLess(v, ver.MinAPIVersion):
		v = ver.MinAPIVersion
	}
	e.mu.Lock()
	e.version = v
	e.mu.Unlock()
	return v, nil
}

// versionLess compares API versions such as "1.41" and "1.9".
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// call sends one request to the versioned API and decodes a JSON answer
// into out (when out is not nil).
func (e *engine) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	v, err := e.negotiate(ctx)
	if err != nil {
		return err
	}
	return e.doJSON(ctx, method, "/v"+v+path, query, in, out)
}

func (e *engine) doJSON(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	resp, err := e.do(ctx, method, path, query, "application/json", body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// do sends a request and returns the response when its status is below
// 400; otherwise an *apiError with the engine's message.
func (e *engine) do(ctx context.Context, method, path string, query url.Values, contentType string, body io.Reader) (*http.Response, error) {
	u := "http://docker" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: %w", method, path, e.socket, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m struct{ Message string }
	if json.Unmarshal(b, &m) != nil || m.Message == "" {
		m.Message = strings.TrimSpace(string(b))
	}
	return &apiError{status: resp.StatusCode, message: m.Message}
}

// ping reports whether an engine answers on the socket.
func (e *engine) ping(ctx context.Context) error {
	resp, err := e.do(ctx, "GET", "/_ping", nil, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if strings.TrimSpace(string(b)) != "OK" {
		return fmt.Errorf("GET /_ping on %s answered %q, not OK", e.socket, b)
	}
	return nil
}

// hijack starts an exec and returns the raw connection its stream comes
// on. The connection is ours, not the HTTP client's: closing its write
// half is how the command's stdin ends.
func (e *engine) hijack(ctx context.Context, path string, in any) (*net.UnixConn, *bufio.Reader, error) {
	v, err := e.negotiate(ctx)
	if err != nil {
		return nil, nil, err
	}
	path = "/v" + v + path
	b, err := json.Marshal(in)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding POST %s: %w", path, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", e.socket)
	if err != nil {
		return nil, nil, fmt.Errorf("POST %s on %s: %w", path, e.socket, err)
	}
	conn := c.(*net.UnixConn)
	// The request is written by hand: net/http gives a hijacked client
	// connection only as an io.ReadWriteCloser, without CloseWrite.
	req, err := http.NewRequest("POST", "http://docker"+path, bytes.NewReader(b))
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("building POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("POST %s on %s: %w", path, e.socket, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("reading the answer to POST %s: %w", path, err)
	}
	if resp.StatusCode >= 400 {
		err := readAPIError(resp)
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, nil, fmt.Errorf("POST %s answered %s, want 101 or 200", path, resp.Status)
	}
	return conn, br, nil
}

// removeContainer kills and removes a container; one already gone, or
// being removed, is no error.
func (e *engine) removeContainer(ctx context.Context, id string) error {
	q := url.Values{"force": {"1"}, "v": {"1"}}
	err := e.call(ctx, "DELETE", "/containers/"+id, q, nil, nil)
	if err == nil || isStatus(err, 404) || isStatus(err, 409) && strings.Contains(err.Error(), "in progress") {
		return nil
	}
	return err
}
