package tenantid

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"acme", true}, {"A-1_b", true}, {"0", true}, {strings.Repeat("a", 128), true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"-a", false}, {"_a", false},
		{"a.b", false}, {"a b", false}, {strings.Repeat("a", 129), false}, {"a\n", false},
	}
	for _, c := range cases {
		if got := Valid(c.id); got != c.want {
			t.Errorf("Valid(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
