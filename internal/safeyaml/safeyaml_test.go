package safeyaml

import (
	"strings"
	"testing"
)

func TestUnmarshal(t *testing.T) {
	var v struct {
		Name  string   `yaml:"name"`
		Hosts []string `yaml:"allowed_hosts"`
	}
	for _, tc := range []struct{ name, in, err string }{
		{"plain", "name: a\nallowed_hosts: [x]\n", ""},
		{"a decoder panic", "name: a\ndescription: 00\nallowed_hosts: !00 ", "the YAML decoder failed"},
		{"a syntax error", "name: [", "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Unmarshal([]byte(tc.in), &v)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want one with %q", err, tc.err)
			}
		})
	}
}
