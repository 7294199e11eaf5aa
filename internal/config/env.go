package config

// EnvVars returns the variables of the config's env section as OpenClaw
// reads them: string members of env itself and of env.vars (which wins);
// shellEnv and other non-string members are not variables.
func EnvVars(c *Config) map[string]string {
	out := map[string]string{}
	if c == nil || c.Env == nil || c.Env.Value == nil || c.Env.Kind != Object {
		return out
	}
	for _, m := range c.Env.Members {
		if m.Value != nil && m.Value.Kind == String {
			out[m.Key] = m.Value.Str
		}
	}
	if vars := c.Env.Get("vars"); vars != nil && vars.Kind == Object {
		for _, m := range vars.Members {
			if m.Value != nil && m.Value.Kind == String {
				out[m.Key] = m.Value.Str
			}
		}
	}
	return out
}
