package imagegen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	defaults := Config{Model: DefaultModel, BaseURL: DefaultBaseURL, APIKeyEnv: DefaultAPIKeyEnv, TimeoutMs: DefaultTimeoutMs}
	tests := []struct {
		name    string
		raw     string
		want    Config
		wantErr string
	}{
		{"absent", ``, defaults, ""},
		{"null", `null`, defaults, ""},
		{"empty object", `{}`, defaults, ""},
		{"everything", `{"model":"google/gemini-3-pro-image-preview","baseUrl":"http://127.0.0.1:8080/v1/","apiKeyEnv":"MY_KEY","timeoutMs":300000}`,
			Config{Model: "google/gemini-3-pro-image-preview", BaseURL: "http://127.0.0.1:8080/v1/", APIKeyEnv: "MY_KEY", TimeoutMs: 300000}, ""},
		{"unknown key", `{"model":"m","apiKey":"sk-1"}`, Config{}, `unknown key "apiKey"`},
		{"not an object", `["model"]`, Config{}, "must be a JSON object"},
		{"broken JSON", `{"model":`, Config{}, "must be a JSON object"},
		{"model not a string", `{"model":3}`, Config{}, "model must be a string"},
		{"model empty", `{"model":""}`, Config{}, "model must not be empty"},
		{"model with a space", `{"model":"google/gemini 2.5"}`, Config{}, "is not a model id"},
		{"baseUrl ftp", `{"baseUrl":"ftp://openrouter.ai/api/v1"}`, Config{}, "must be an http or https URL"},
		{"baseUrl relative", `{"baseUrl":"openrouter.ai/api/v1"}`, Config{}, "must be an http or https URL"},
		{"baseUrl without host", `{"baseUrl":"https:///api/v1"}`, Config{}, "has no host"},
		{"baseUrl not a URL", `{"baseUrl":"https://[::1"}`, Config{}, "is not a URL"},
		{"baseUrl with credentials", `{"baseUrl":"https://u:p@openrouter.ai/api/v1"}`, Config{}, "must not carry credentials"},
		{"baseUrl with a query", `{"baseUrl":"https://openrouter.ai/api/v1?x=1"}`, Config{}, "must not have a query"},
		{"apiKeyEnv bad name", `{"apiKeyEnv":"OPENROUTER-KEY"}`, Config{}, "is not an environment variable name"},
		{"apiKeyEnv leading digit", `{"apiKeyEnv":"1KEY"}`, Config{}, "is not an environment variable name"},
		{"timeout zero", `{"timeoutMs":0}`, Config{}, "timeoutMs is 0; it must be from 1000 to 300000"},
		{"timeout too small", `{"timeoutMs":999}`, Config{}, "timeoutMs is 999"},
		{"timeout too large", `{"timeoutMs":300001}`, Config{}, "timeoutMs is 300001"},
		{"timeout negative", `{"timeoutMs":-5}`, Config{}, "timeoutMs is -5"},
		{"timeout fractional", `{"timeoutMs":1500.5}`, Config{}, "timeoutMs must be an integer"},
		{"timeout a string", `{"timeoutMs":"120000"}`, Config{}, "timeoutMs must be an integer"},
		{"timeout huge", `{"timeoutMs":99999999999999999999}`, Config{}, "timeoutMs must be an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "image-gen config: ") {
					t.Fatalf("Decode error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero is the defaults", Config{}, ""},
		{"timeout out of range", Config{TimeoutMs: 400000}, "timeoutMs is 400000"},
		{"bad base URL", Config{BaseURL: "file:///etc"}, "must be an http or https URL"},
		{"bad env name", Config{APIKeyEnv: "A B"}, "apiKeyEnv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := New(tc.cfg, nil)
			if tc.wantErr == "" {
				if err != nil || tool.url != DefaultBaseURL+"/chat/completions" {
					t.Fatalf("New = %+v, %v", tool, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
