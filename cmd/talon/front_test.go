package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseGateways(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []gatewayNode
		err  string
	}{
		{"http://10.0.0.1:18789", []gatewayNode{{"10.0.0.1:18789", "http://10.0.0.1:18789"}}, ""},
		{" a=http://h1:1/ , b=https://h2 ,", []gatewayNode{{"a", "http://h1:1"}, {"b", "https://h2"}}, ""},
		{"", nil, "name at least one"},
		{"a=ftp://h", nil, "want http:// or https://"},
		{"a=http://u:p@h", nil, "without user"},
		{"../x=http://h", nil, "node id"},
		{"a=http://h1,a=http://h2", nil, "listed twice"},
		{"http://h1,b=http://h1", nil, "listed twice"},
		{"a=h1:18789", nil, "want http:// or https://"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseGateways(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
