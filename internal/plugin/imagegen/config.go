package imagegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Plugin and tool ids.
const (
	PluginID = "image-gen"
	ToolName = "generate_image"
)

// Defaults of Config.
const (
	DefaultModel     = "google/gemini-2.5-flash-image"
	DefaultBaseURL   = "https://openrouter.ai/api/v1"
	DefaultAPIKeyEnv = "OPENROUTER_API_KEY"
	DefaultTimeoutMs = 120000
	// MaxTimeoutMs caps timeoutMs: one call may take five minutes at most.
	MaxTimeoutMs = 300000
	// minTimeoutMs keeps a typo such as 120 (seconds meant) from making
	// every call fail.
	minTimeoutMs = 1000
)

// Config is plugins.entries.image-gen.config.
type Config struct {
	// Model is the OpenRouter model id; it must be able to output images.
	Model string `json:"model"`
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions".
	BaseURL string `json:"baseUrl"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"apiKeyEnv"`
	// TimeoutMs bounds one tool call, retries included.
	TimeoutMs int `json:"timeoutMs"`
}

var configKeys = []string{"model", "baseUrl", "apiKeyEnv", "timeoutMs"}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Decode reads the plugin's config object strictly: unknown keys, wrong
// types and out-of-range values are errors naming the key. Absent keys get
// their defaults; nil, empty or null raw is all defaults.
func Decode(raw json.RawMessage) (Config, error) {
	raw = bytes.TrimSpace(raw)
	var cfg Config
	if len(raw) == 0 || string(raw) == "null" {
		return cfg.withDefaults(), nil
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return Config{}, errors.New("image-gen config: must be a JSON object")
	}
	for k := range m {
		if !slices.Contains(configKeys, k) {
			return Config{}, fmt.Errorf("image-gen config: unknown key %q (known keys: %s)", k, strings.Join(configKeys, ", "))
		}
	}
	for _, k := range []struct {
		name string
		dst  *string
	}{{"model", &cfg.Model}, {"baseUrl", &cfg.BaseURL}, {"apiKeyEnv", &cfg.APIKeyEnv}} {
		v, ok := m[k.name]
		if !ok {
			continue
		}
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, k.dst) != nil {
			return Config{}, fmt.Errorf("image-gen config: %s must be a string", k.name)
		}
		if *k.dst == "" {
			return Config{}, fmt.Errorf("image-gen config: %s must not be empty (leave it out for the default)", k.name)
		}
	}
	if v, ok := m["timeoutMs"]; ok {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return Config{}, fmt.Errorf("image-gen config: timeoutMs must be an integer number of milliseconds, got %s", v)
		}
		if n < minTimeoutMs || n > MaxTimeoutMs {
			return Config{}, timeoutErr(n)
		}
		cfg.TimeoutMs = int(n)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func timeoutErr(n int64) error {
	return fmt.Errorf("image-gen config: timeoutMs is %d; it must be from %d to %d", n, minTimeoutMs, MaxTimeoutMs)
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	if c.TimeoutMs == 0 {
		c.TimeoutMs = DefaultTimeoutMs
	}
	return c
}

// validate checks a Config whose defaults are filled.
func (c Config) validate() error {
	if strings.IndexFunc(c.Model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 || len(c.Model) > 200 {
		return fmt.Errorf("image-gen config: model %q is not a model id (no spaces, at most 200 bytes), e.g. %q", c.Model, DefaultModel)
	}
	if err := checkBaseURL(c.BaseURL); err != nil {
		return err
	}
	if !envName.MatchString(c.APIKeyEnv) {
		return fmt.Errorf("image-gen config: apiKeyEnv %q is not an environment variable name (letters, digits and _, not starting with a digit)", c.APIKeyEnv)
	}
	if c.TimeoutMs < minTimeoutMs || c.TimeoutMs > MaxTimeoutMs {
		return timeoutErr(int64(c.TimeoutMs))
	}
	return nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	bad := func(why string) error {
		return fmt.Errorf("image-gen config: baseUrl %q %s, e.g. %q", s, why, DefaultBaseURL)
	}
	switch {
	case err != nil:
		return bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must be an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return bad("has no host")
	case u.User != nil:
		return bad("must not carry credentials (use apiKeyEnv)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("must not have a query or fragment")
	}
	return nil
}

// timeout is TimeoutMs as a Duration.
func (c Config) timeout() time.Duration { return time.Duration(c.TimeoutMs) * time.Millisecond }
