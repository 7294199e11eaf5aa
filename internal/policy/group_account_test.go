package policy

import "testing"

// TestGroupAccountLookup: a run without an account uses accounts.default;
// account ids are normalised and matched ignoring case (§4.5).
func TestGroupAccountLookup(t *testing.T) {
	cfg := mustConfig(t, `{"channels":{"whatsapp":{
		"groups":{"*":{"tools":{"allow":["read"]}}},
		"accounts":{"default":{"groups":{"*":{"tools":{"allow":["exec"]}}}},"Biz":{"groups":{"*":{"tools":{"allow":["process"]}}}}}}}}`)
	cases := []struct{ account, want, key string }{
		{"", "exec", `channels.whatsapp.accounts.default.groups["*"].tools.allow`},
		{"BIZ", "process", `channels.whatsapp.accounts.Biz.groups["*"].tools.allow`},
		{"other", "read", `channels.whatsapp.groups["*"].tools.allow`},
	}
	for _, c := range cases {
		t.Run(c.account, func(t *testing.T) {
			ctx := Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true, AccountID: c.account}
			r := Evaluate(cfg, ctx, []Tool{{Name: "read"}, {Name: "exec"}, {Name: "process"}})
			if got := r.Names(); len(got) != 1 || got[0] != c.want {
				t.Fatalf("tools = %v, want [%s]", got, c.want)
			}
			for _, s := range r.Steps {
				if s.Label == StepGroup && s.AllowKey != c.key {
					t.Errorf("group allow key = %s, want %s", s.AllowKey, c.key)
				}
			}
		})
	}
}
