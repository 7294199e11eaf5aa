package format

import "testing"

func TestTakeDirectives(t *testing.T) {
	tests := []struct {
		name, in, out string
		want          Directives
	}{
		{"none", "just text", "just text", Directives{}},
		{"current", "[[reply_to_current]] Hello", "Hello", Directives{ReplyToCurrent: true}},
		{"spaced and cased", "Hi [[ Reply_To_Current ]]", "Hi", Directives{ReplyToCurrent: true}},
		{"explicit id", "[[reply_to: 4711]]\nAnswer", "Answer", Directives{ReplyTo: "4711"}},
		{"first id wins", "[[reply_to:1]] a [[reply_to:2]] b", "a b", Directives{ReplyTo: "1"}},
		{"both", "[[reply_to_current]][[reply_to:9]]x", "x", Directives{ReplyToCurrent: true, ReplyTo: "9"}},
		{"between words keeps a space", "one[[reply_to_current]]two", "one two", Directives{ReplyToCurrent: true}},
		{"inside a fence stays", "```\n[[reply_to_current]]\n```", "```\n[[reply_to_current]]\n```", Directives{}},
		{"after a fence is taken", "```\nx\n```\n[[reply_to:5]] y", "```\nx\n```\ny", Directives{ReplyTo: "5"}},
		{"empty id is text", "[[reply_to:]] x", "[[reply_to:]] x", Directives{}},
		{"unknown tag is text", "[[audio]] x [[", "[[audio]] x [[", Directives{}},
		{"control characters refused", "[[reply_to:a\x00b]] x", "[[reply_to:a\x00b]] x", Directives{}},
		{"only a tag", "  [[reply_to_current]]  ", "", Directives{ReplyToCurrent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, d := TakeDirectives(tt.in)
			if out != tt.out || d != tt.want {
				t.Errorf("got %q %+v, want %q %+v", out, d, tt.out, tt.want)
			}
		})
	}
}

func TestSilent(t *testing.T) {
	tests := []struct {
		in            string
		silent, maybe bool
	}{
		{"NO_REPLY", true, true},
		{"  no_reply\n", true, true},
		{"No_Reply", true, true},
		{"NO_REPLY.", false, true},
		{"NO_REPLY because", false, true},
		{"NO_", false, true},
		{"", false, true},
		{"NO REPLY", false, false},
		{"Sure, NO_REPLY", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := IsSilent(tt.in); got != tt.silent {
				t.Errorf("IsSilent = %v, want %v", got, tt.silent)
			}
			if got := MaybeSilent(tt.in); got != tt.maybe {
				t.Errorf("MaybeSilent = %v, want %v", got, tt.maybe)
			}
		})
	}
}

func TestStripHeartbeat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"HEARTBEAT_OK", ""},
		{"  **HEARTBEAT_OK**  ", ""},
		{"HEARTBEAT_OK Done, the build is green.", "Done, the build is green."},
		{"Done.\n\nHEARTBEAT_OK!", "Done."},
		{"HEARTBEAT_OK\nText\nHEARTBEAT_OK", "Text"},
		{"Keep HEARTBEAT_OK in the middle", "Keep HEARTBEAT_OK in the middle"},
		{"HEARTBEAT_OKAY is not it", "HEARTBEAT_OKAY is not it"},
		{"Ends with HEARTBEAT_OK and words", "Ends with HEARTBEAT_OK and words"},
		{"no token\n\n- list\n", "no token\n\n- list\n"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := StripHeartbeat(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrefix(t *testing.T) {
	tests := []struct{ text, prefix, want string }{
		{"Hello", "[bot]", "[bot] Hello"},
		{"[bot] Hello", "[bot]", "[bot] Hello"},
		{"  [bot] Hello", "[bot]", "  [bot] Hello"},
		{"Hello", "", "Hello"},
		{"", "[bot]", ""},
		{"[bo] Hello", "[bot]", "[bot] [bo] Hello"},
	}
	for _, tt := range tests {
		t.Run(tt.text+"|"+tt.prefix, func(t *testing.T) {
			got := Prefix(tt.text, tt.prefix)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if again := Prefix(got, tt.prefix); again != got {
				t.Errorf("applied twice: %q", again)
			}
		})
	}
}
