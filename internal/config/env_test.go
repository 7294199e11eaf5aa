package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvVars(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string]string
	}{
		{"absent", `{}`, map[string]string{}},
		{"top level and vars", `{env: {A: "1", vars: {B: "2", A: "3"}, shellEnv: {enabled: true}, N: 4}}`, map[string]string{"A": "3", "B": "2"}},
		{"empty strings kept", `{env: {E: ""}}`, map[string]string{"E": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := decodeJSON5(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, EnvVars(c)); diff != "" {
				t.Errorf("EnvVars (-want +got):\n%s", diff)
			}
		})
	}
}
