package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Auth is the `auth` section: OpenClaw's auth profiles, metadata and
// routing only. A profile names a provider and a credential mode; the
// secret itself is not in the config (OpenClaw keeps it in a per-agent
// store, Talon in an environment variable: ProfileKeyEnv).
type Auth struct {
	Profiles map[string]AuthProfile `json:"profiles"`
	// Order is the profile ids to try per provider id, first first.
	Order map[string]List `json:"order"`
}

// AuthProfile is one `auth.profiles.<id>` entry.
type AuthProfile struct {
	Provider    string `json:"provider"`
	Mode        string `json:"mode"`
	Email       string `json:"email"`
	DisplayName string `json:"displayName"`
}

// Auth profile modes. Talon reads a key for api_key and token (both are
// a static secret sent as the provider's key); oauth and aws-sdk have no
// client here.
const (
	AuthAPIKey = "api_key"
	AuthToken  = "token"
	AuthOAuth  = "oauth"
	AuthAWSSDK = "aws-sdk"
)

var authModes = []string{AuthAPIKey, AuthToken, AuthOAuth, AuthAWSSDK}

// DefaultProfile is the name of the profile that stands for a provider's
// own key (models.providers.<id>.apiKey or the built-in's variable).
const DefaultProfile = "default"

// ProfileName is the part of a profile id after "<provider>:", the id
// itself when it has no such prefix.
func ProfileName(provider, id string) string {
	if p, name, ok := strings.Cut(id, ":"); ok && strings.EqualFold(p, provider) {
		return name
	}
	return id
}

// ProfileKeyEnv is the environment variable that holds the key of auth
// profile id of provider: <PROVIDER>_API_KEY_<NAME>, upper case, every
// other character than a letter or digit an underscore ("openai:work" →
// OPENAI_API_KEY_WORK), the numbered and named keys OpenClaw's key
// rotation reads too. The default profile has none: it is the provider's
// own key.
func ProfileKeyEnv(provider, id string) string {
	name := ProfileName(provider, id)
	if strings.EqualFold(name, DefaultProfile) {
		return ""
	}
	return envName(provider) + "_API_KEY_" + envName(name)
}

func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// AuthProfiles are the ids of the profiles that hold a key for provider,
// in the order to try them: auth.order.<provider> when it is set (ids it
// names that no profile of the provider defines are passed over), else
// every profile of the provider in id order. Only api_key and token
// profiles are listed. Provider ids compare case-insensitively.
func (c *Config) AuthProfiles(provider string) []string {
	if c == nil || len(c.Auth.Profiles) == 0 {
		return nil
	}
	usable := func(id string) bool {
		p, ok := c.Auth.Profiles[id]
		return ok && strings.EqualFold(strings.TrimSpace(p.Provider), provider) &&
			(p.Mode == AuthAPIKey || p.Mode == AuthToken)
	}
	for k, order := range c.Auth.Order {
		if strings.EqualFold(k, provider) && order != nil {
			var out []string
			for _, id := range order {
				if usable(id) && !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
			return out
		}
	}
	var out []string
	for id := range c.Auth.Profiles {
		if usable(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// auth checks the auth section: every profile names a provider and a
// known mode; modes without a client in Talon, and order entries that
// name no profile of their provider, are warned of.
func (k *checker) auth(a *Auth) {
	for _, id := range slices.Sorted(maps.Keys(a.Profiles)) {
		p := a.Profiles[id]
		at := "auth.profiles." + id
		if strings.TrimSpace(id) == "" {
			k.fail("auth.profiles", "expected profile ids that are not empty")
		}
		if strings.TrimSpace(p.Provider) == "" {
			k.fail(at+".provider", "expected the provider id this profile is a key of")
		}
		switch {
		case !slices.Contains(authModes, p.Mode):
			k.fail(at+".mode", fmt.Sprintf("expected one of %s (got %q)", strings.Join(authModes, ", "), p.Mode))
		case p.Mode == AuthOAuth || p.Mode == AuthAWSSDK:
			k.warn(at+".mode", fmt.Sprintf("%s profiles are not used by Talon: only api_key and token profiles, whose key is an environment variable", p.Mode))
		}
	}
	for _, prov := range slices.Sorted(maps.Keys(a.Order)) {
		for i, id := range a.Order[prov] {
			if p, ok := a.Profiles[id]; !ok || !strings.EqualFold(strings.TrimSpace(p.Provider), prov) {
				k.warn(joinIndex("auth.order."+prov, i), fmt.Sprintf("names %q, which is no profile of provider %q under auth.profiles; it is passed over", id, prov))
			}
		}
	}
}
